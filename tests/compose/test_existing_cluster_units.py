"""The pure parts of existing-cluster support: nodes.toml, the partition rules that spare the
SSH connection, the remote power-loss cut, and the generated docker-compose file."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

import pytest

from compose.compose_file import COMPOSE_LABEL, _yaml, compose_document
from compose.config import ClusterConfig
from compose.nodes_file import NodesFileError, load_nodes
from compose.remote import peers_on_nodes, ssh_peer
from nemesis.net.netns import NetNS
from nemesis.net.partition import Node, PartitionSpec, plan_rules
from runner.config import RunConfig, ssh_peer_refusal

GOOD = """
user = "kafka"
kafka_home = "/srv/kafka/"

[[node]]
id = 1
host = "10.0.0.11"

[[node]]
id = 2
host = "10.0.0.12"
ssh_port = 2222
roles = "broker"

[[node]]
id = 3
container = "kc-node-3"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nodes.toml"
    path.write_text(text)
    return path


def test_nodes_file_defaults_and_overrides(tmp_path):
    one, two, three = load_nodes(_write(tmp_path, GOOD))
    assert (one.node_id, one.ip, one.roles) == (1, "10.0.0.11", "broker,controller")
    assert one.ssh is not None and (one.ssh.user, one.ssh.port) == ("kafka", 22)
    assert one.kafka_home == "/srv/kafka" and one.server_log == "/srv/kafka/logs/server.log"
    assert one.start == ("/srv/kafka/bin/kafka-server-start.sh -daemon "
                         "/srv/kafka/config/server.properties")
    assert two.ssh is not None and two.ssh.port == 2222 and two.roles == "broker"
    # a container node: no SSH, its address comes from the engine when the run starts
    assert three.ssh is None and three.container == "kc-node-3" and three.ip == ""


@pytest.mark.parametrize("text,reason", [
    ("", "no [[node]] tables"),
    ("[[node]]\nid = 1\n", "needs an id and either a host"),
    ('[[node]]\nid = 1\nhost = "a"\ncontainer = "b"\n', "needs an id and either a host"),
    ('[[node]]\nid = 1\nhost = "10.0.0.1"\ncolour = "red"\n', "unknown key(s) colour"),
    ('colour = "red"\n[[node]]\nid = 1\nhost = "10.0.0.1"\n', "unknown top-level key(s) colour"),
    ('[[node]]\nid = "one"\nhost = "10.0.0.1"\n', "id must be a int"),
    ('[[node]]\nid = 1\nhost = "10.0.0.1"\nroles = "leader"\n', "roles must be broker"),
    ('[[node]]\nid = 1\nhost = "10.0.0.1"\n[[node]]\nid = 1\nhost = "10.0.0.2"\n',
     "node ids repeat"),
    ('[[node]]\nid = 1\nhost = "10.0.0.1"\nkey = "/nonexistent/key"\n', "does not exist"),
    ("[[node]\n", "not valid TOML"),
    # values that reach ssh's or pgrep's command line (issue 47; accepted before): an option
    # smuggled in as the user or the host, a pattern that is not a class name, a relative
    # or climbing log dir
    ('[[node]]\nid = 1\nhost = "10.0.0.1"\nuser = "-oProxyCommand=sh"\n', "user must be"),
    ('[[node]]\nid = 1\nhost = "-oProxyCommand=sh"\n', "host must be"),
    ('[[node]]\nid = 1\nhost = "10.0.0.1"\nprocess = "."\n', "process must be"),
    ('[[node]]\nid = 1\nhost = "10.0.0.1"\nprocess = "kafka.Kafka -x"\n', "process must be"),
    ('[[node]]\nid = 1\nhost = "10.0.0.1"\nlog_dirs = ["data"]\n', "absolute paths"),
    ('[[node]]\nid = 1\nhost = "10.0.0.1"\nlog_dirs = ["/srv/../etc"]\n', "without '..'"),
])
def test_nodes_file_mistakes_are_one_line(tmp_path, text, reason):
    with pytest.raises(NodesFileError) as err:
        load_nodes(_write(tmp_path, text))
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_missing_nodes_file(tmp_path):
    with pytest.raises(NodesFileError, match="cannot read"):
        load_nodes(tmp_path / "absent.toml")


def test_every_cut_on_a_node_reached_over_ssh_spares_its_ssh_port():
    n1 = Node("n1", ("10.0.0.11",), NetNS.over_ssh("n1", ("ssh", "h1", "--"), 22))
    n2 = Node("n2", ("10.0.0.12",), NetNS.over_ssh("n2", ("ssh", "h2", "--"), 2222))
    client = Node("client", ("10.0.0.1",), None)
    spec = PartitionSpec.custom([n1, n2, client],
                                {("client", "n1"), ("n1", "client"), ("n1", "n2")})
    rules = {(r.node, r.hook, r.match) for r in plan_rules(spec)}
    assert rules == {
        # this host -> n1: dropped on n1's input, except SSH to n1
        ("n1", "INPUT", ("-s", "10.0.0.1", "-p", "tcp", "!", "--dport", "22")),
        # n1 -> this host: dropped on n1's output, except SSH replies
        ("n1", "OUTPUT", ("-d", "10.0.0.1", "-p", "tcp", "!", "--sport", "22")),
        # between nodes SSH is spared too: we may reach n2 from n1's address (running on
        # n1, or through it as a bastion); before, nothing was spared and the heal was cut
        ("n2", "INPUT", ("-s", "10.0.0.11", "-p", "tcp", "!", "--dport", "2222")),
    }


def test_the_ssh_peer_is_the_first_field_of_ssh_connection_in_its_plain_form():
    assert ssh_peer("10.0.0.1 52814 10.0.0.11 22\n") == "10.0.0.1"
    assert ssh_peer("::ffff:10.0.0.11 52814 ::ffff:10.0.0.12 22") == "10.0.0.11"
    assert ssh_peer("fe80::1%eth0 52814 fe80::2%eth0 22") == "fe80::1"
    assert ssh_peer("") is None  # not over SSH (a shell that unset it)
    assert ssh_peer("bastion 52814 10.0.0.12 22") is None


def test_a_node_that_sees_us_come_from_a_nodes_address_is_named():
    nodes = {1: "10.0.0.11", 2: "10.0.0.12", 3: "2001:db8::13"}
    # from a host of our own: no node's address
    assert peers_on_nodes({1: "10.0.0.1 5 10.0.0.11 22", 2: "10.0.0.1 5 10.0.0.12 22"},
                          nodes) == []
    # run on node 1 (it sees itself), or through node 1 as a bastion (node 2 sees node 1)
    assert peers_on_nodes({1: "10.0.0.11 5 10.0.0.11 22", 2: "10.0.0.11 5 10.0.0.12 22",
                           3: "2001:db8:0:0:0:0:0:13 5 2001:db8::13 22"}, nodes) == [
        (1, 1, "10.0.0.11"), (2, 1, "10.0.0.11"), (3, 3, "2001:db8::13")]


def test_the_ssh_peer_is_asked_only_when_the_run_may_cut_nodes_apart(tmp_path):
    nodes = _write(tmp_path, '[[node]]\nid = 1\nhost = "10.0.0.11"\n')
    # no SSH is tried (10.0.0.11 is nobody's): no partition in the run's faults or script
    assert ssh_peer_refusal(RunConfig(nodes=str(nodes), faults=["kill", "pause"])) is None
    assert ssh_peer_refusal(RunConfig(nodes=str(nodes)), script_faults=("slow",)) is None
    assert ssh_peer_refusal(RunConfig(faults=["partition"])) is None  # our own cluster


def test_an_ssh_namespace_quotes_the_command_for_the_remote_shell():
    ns = NetNS.over_ssh("n1", ("ssh", "-p", "22", "root@h", "--"), 22)
    assert ns.argv(["iptables", "-m", "comment", "--comment", "a b"]) == [
        "ssh", "-p", "22", "root@h", "--", "iptables -m comment --comment 'a b'"]
    assert ns.exists()  # a host outlives its broker


def test_compose_document_runs_the_same_nodes():
    cfg = ClusterConfig(brokers=3)
    doc, ips = compose_document(cfg, "kafka-chaos/kafka:4.3.1-x", "proj",
                                ipaddress.IPv4Network("172.31.7.0/24"), {COMPOSE_LABEL: "proj"})
    assert ips == {1: "172.31.7.11", 2: "172.31.7.12", 3: "172.31.7.13"}
    node = doc["services"]["node2"]
    assert node["container_name"] == "proj-node-2"
    assert node["networks"]["kafka"]["ipv4_address"] == "172.31.7.12"
    # compose interpolates "$": the start script's variable must reach bash as one "$"
    assert "$$KC_SERVER_PROPERTIES" in node["command"][2]
    props = node["environment"]["KC_SERVER_PROPERTIES"]
    assert "node.id=2" in props and "advertised.listeners=CLIENT://172.31.7.12:9092" in props
    assert doc["networks"]["kafka"]["ipam"]["config"] == [
        {"subnet": "172.31.7.0/24", "gateway": "172.31.7.1"}]


def test_generated_compose_file_is_valid_for_docker_compose(tmp_path):
    cfg = ClusterConfig(brokers=3, controllers=3)
    doc, _ = compose_document(cfg, "img:1", "proj", ipaddress.IPv4Network("172.31.8.0/24"),
                              {COMPOSE_LABEL: "proj"})
    path = tmp_path / "docker-compose.yml"
    path.write_text("\n".join(_yaml(doc)) + "\n")
    proc = subprocess.run(["docker-compose", "-f", str(path), "-p", "proj", "config",
                           "--services"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.split()) == ["node1", "node101", "node102", "node103",
                                           "node2", "node3"]
