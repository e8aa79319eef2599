// kafka-chaos's driver of sarama (github.com/IBM/sarama): one producer (the AsyncProducer)
// or one consumer (a partition consumer per partition, or a ConsumerGroup), reporting every
// attempt, acknowledgement, error and read as a line on stdout to the Python recorder. Built
// with ../common/driver.go (the spec, codec, lines and loops) by runner/go_client.py against
// the sarama version a run asks for.
package main

import (
	"context"
	"errors"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

const (
	clientName   = "sarama"
	clientModule = "github.com/IBM/sarama"
)

func baseConfig(s *spec, role string) *sarama.Config {
	// sarama logs nothing unless given a logger; its retries and rebalances are worth having
	sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	cfg := sarama.NewConfig()
	cfg.ClientID = "kc-" + role + "-" + s.str("name")
	// Kafka 4 brokers dropped the protocol versions older than 2.1; older sarama releases
	// default to older ones.
	if !cfg.Version.IsAtLeast(sarama.V2_1_0_0) {
		cfg.Version = sarama.V2_1_0_0
	}
	s.take("client.id")
	s.take("bootstrap.servers")
	return cfg
}

// connect retries a constructor (sarama's fetch metadata at once, so a cluster under a fault
// can refuse them) until it works or the driver is stopped; nil then.
func connect[T any](what string, f func() (T, error)) (T, bool) {
	for {
		c, err := f()
		if err == nil {
			return c, true
		}
		warn("%s: %v (trying again)", what, err)
		select {
		case <-stopped:
			return c, false
		case <-time.After(time.Second):
		}
	}
}

// ------------------------------------------------------------------ producer

type saramaProducer struct {
	p     sarama.AsyncProducer
	topic string
	done  sync.WaitGroup // the goroutines reading successes and errors
	pending
}

func newProducer(s *spec) producerClient {
	cfg := baseConfig(s, "producer")
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	acks, _ := s.take("acks")
	switch acks {
	case "all", "-1", "":
		cfg.Producer.RequiredAcks = sarama.WaitForAll
	case "1":
		cfg.Producer.RequiredAcks = sarama.WaitForLocal
	case "0":
		cfg.Producer.RequiredAcks = sarama.NoResponse
	default:
		fatal("config acks=%s: not 0, 1 or all", acks)
	}
	// sarama is not idempotent unless told (Kafka's default is on with acks=all, and the
	// workload always says which)
	idem, _ := s.takeBool("enable.idempotence")
	cfg.Producer.Idempotent = idem
	if n, ok := s.takeInt("max.in.flight.requests.per.connection"); ok {
		cfg.Net.MaxOpenRequests = n
	}
	if idem && cfg.Net.MaxOpenRequests != 1 {
		// sarama's idempotent producer refuses more than one request in flight
		warn("config max.in.flight.requests.per.connection=%d: sarama's idempotent producer "+
			"needs 1 (Net.MaxOpenRequests), so 1", cfg.Net.MaxOpenRequests)
		cfg.Net.MaxOpenRequests = 1
	}
	linger, _ := s.takeMs("linger.ms")
	cfg.Producer.Flush.Frequency = linger // 0 with the other triggers 0: as soon as possible
	if n, ok := s.takeInt("batch.size"); ok && n > 0 {
		// the per-partition batch's bound, as batch.size is; and with a linger, a full batch
		// is sent at once (a bytes trigger without a linger would wait for the bytes)
		cfg.Producer.MaxMessageBytes = n
		if linger > 0 {
			cfg.Producer.Flush.Bytes = n
		}
	}
	if d, ok := s.takeMs("request.timeout.ms"); ok && d > 0 {
		// as Kafka's Java client: the produce request's timeout and the client's wait for it
		cfg.Producer.Timeout = d
		cfg.Net.ReadTimeout = d
	}
	retries, retriesSet := s.takeInt("retries")
	delivery, deliverySet := s.takeMs("delivery.timeout.ms")
	if retriesSet {
		cfg.Producer.Retry.Max = retries
		if deliverySet {
			warn("config delivery.timeout.ms=%v: sarama bounds a record by its retries only, "+
				"ignored", delivery)
		}
	} else if deliverySet && delivery > 0 {
		// no delivery timeout in sarama: its retry budget stands in for one (Kafka's
		// retries are unbounded and the timeout ends them; sarama's default is 3 retries)
		n := max(1, int(delivery/cfg.Producer.Retry.Backoff))
		warn("config delivery.timeout.ms=%v: no equivalent in sarama, approximated as "+
			"Producer.Retry.Max=%d at Producer.Retry.Backoff=%v", delivery, n,
			cfg.Producer.Retry.Backoff)
		cfg.Producer.Retry.Max = n
	}
	if idem && cfg.Producer.Retry.Max < 1 {
		warn("config retries=%d: sarama's idempotent producer needs 1 or more, so 1",
			cfg.Producer.Retry.Max)
		cfg.Producer.Retry.Max = 1
	}
	if c, ok := s.take("compression.type"); ok {
		codec, known := map[string]sarama.CompressionCodec{
			"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP,
			"snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4,
			"zstd": sarama.CompressionZSTD,
		}[c]
		if !known {
			fatal("config compression.type=%s: not none, gzip, snappy, lz4 or zstd", c)
		}
		cfg.Producer.Compression = codec
	}
	if err := cfg.Validate(); err != nil {
		fatal("sarama producer: %v", err)
	}
	sp := &saramaProducer{topic: s.str("topic")}
	addrs := strings.Split(s.str("bootstrap"), ",")
	p, ok := connect("sarama producer", func() (sarama.AsyncProducer, error) {
		return sarama.NewAsyncProducer(addrs, cfg)
	})
	if !ok {
		return sp // stopped before it could start: nothing is sent
	}
	sp.p = p
	sp.done.Add(2)
	go func() {
		defer sp.done.Done()
		for m := range p.Successes() {
			// Offset is set only from a produce response without error: -1 (ours) stays
			// for acks=0 and for a DUPLICATE_SEQUENCE_NUMBER answer, which sarama also
			// takes for success
			out.ack(m.Metadata.(int64), m.Offset, nowNs())
			sp.n.Add(-1)
		}
	}()
	go func() {
		defer sp.done.Done()
		for e := range p.Errors() {
			out.line("error", e.Msg.Metadata.(int64), nowNs(), errorName(e.Err))
			sp.n.Add(-1)
		}
	}()
	return sp
}

func (p *saramaProducer) send(seq int64, partition int32, value []byte) {
	if p.p == nil {
		out.line("refused", seq, nowNs(), "NotStarted")
		return
	}
	m := &sarama.ProducerMessage{Topic: p.topic, Partition: partition, Offset: -1,
		Value: sarama.ByteEncoder(value), Metadata: seq}
	p.n.Add(1)
	select {
	case p.p.Input() <- m:
	case <-producingOver:
		// the input queue was full and the producer's time is up: never handed over
		p.n.Add(-1)
		out.line("refused", seq, nowNs(), "NotQueued")
	}
}

func (p *saramaProducer) close(timeout time.Duration) {
	if p.p == nil {
		return
	}
	deadline := time.Now().Add(timeout)
	p.wait(deadline)
	// AsyncClose flushes what is buffered and then closes the channels, whose readers
	// see everything out; past the deadline the driver ends without them (info)
	p.p.AsyncClose()
	finished := make(chan struct{})
	go func() {
		p.done.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(max(time.Until(deadline), time.Second)):
		warn("close did not finish in time")
	}
}

// Kafka's names of its protocol error codes (sarama's KError has only messages).
var kafkaErrors = map[sarama.KError]string{
	-1: "UNKNOWN_SERVER_ERROR", 1: "OFFSET_OUT_OF_RANGE", 2: "CORRUPT_MESSAGE",
	3: "UNKNOWN_TOPIC_OR_PARTITION", 4: "INVALID_FETCH_SIZE", 5: "LEADER_NOT_AVAILABLE",
	6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT", 8: "BROKER_NOT_AVAILABLE",
	9: "REPLICA_NOT_AVAILABLE", 10: "MESSAGE_TOO_LARGE", 11: "STALE_CONTROLLER_EPOCH",
	12: "OFFSET_METADATA_TOO_LARGE", 13: "NETWORK_EXCEPTION",
	14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE", 16: "NOT_COORDINATOR",
	17: "INVALID_TOPIC_EXCEPTION", 18: "RECORD_LIST_TOO_LARGE", 19: "NOT_ENOUGH_REPLICAS",
	20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND", 21: "INVALID_REQUIRED_ACKS",
	22: "ILLEGAL_GENERATION", 23: "INCONSISTENT_GROUP_PROTOCOL", 24: "INVALID_GROUP_ID",
	25: "UNKNOWN_MEMBER_ID", 26: "INVALID_SESSION_TIMEOUT", 27: "REBALANCE_IN_PROGRESS",
	28: "INVALID_COMMIT_OFFSET_SIZE", 29: "TOPIC_AUTHORIZATION_FAILED",
	30: "GROUP_AUTHORIZATION_FAILED", 31: "CLUSTER_AUTHORIZATION_FAILED",
	32: "INVALID_TIMESTAMP", 33: "UNSUPPORTED_SASL_MECHANISM", 34: "ILLEGAL_SASL_STATE",
	35: "UNSUPPORTED_VERSION", 36: "TOPIC_ALREADY_EXISTS", 37: "INVALID_PARTITIONS",
	38: "INVALID_REPLICATION_FACTOR", 39: "INVALID_REPLICA_ASSIGNMENT", 40: "INVALID_CONFIG",
	41: "NOT_CONTROLLER", 42: "INVALID_REQUEST", 43: "UNSUPPORTED_FOR_MESSAGE_FORMAT",
	44: "POLICY_VIOLATION", 45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
	46: "DUPLICATE_SEQUENCE_NUMBER", 47: "INVALID_PRODUCER_EPOCH", 48: "INVALID_TXN_STATE",
	49: "INVALID_PRODUCER_ID_MAPPING", 50: "INVALID_TRANSACTION_TIMEOUT",
	51: "CONCURRENT_TRANSACTIONS", 52: "TRANSACTION_COORDINATOR_FENCED",
	53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 54: "SECURITY_DISABLED",
	55: "OPERATION_NOT_ATTEMPTED", 56: "KAFKA_STORAGE_ERROR", 57: "LOG_DIR_NOT_FOUND",
	58: "SASL_AUTHENTICATION_FAILED", 59: "UNKNOWN_PRODUCER_ID",
	60: "REASSIGNMENT_IN_PROGRESS", 67: "INVALID_PRINCIPAL_TYPE", 68: "NON_EMPTY_GROUP",
	69: "GROUP_ID_NOT_FOUND", 70: "FETCH_SESSION_ID_NOT_FOUND",
	71: "INVALID_FETCH_SESSION_EPOCH", 72: "LISTENER_NOT_FOUND",
	73: "TOPIC_DELETION_DISABLED", 74: "FENCED_LEADER_EPOCH", 75: "UNKNOWN_LEADER_EPOCH",
	76: "UNSUPPORTED_COMPRESSION_TYPE", 77: "STALE_BROKER_EPOCH", 78: "OFFSET_NOT_AVAILABLE",
	79: "MEMBER_ID_REQUIRED", 80: "PREFERRED_LEADER_NOT_AVAILABLE",
	81: "GROUP_MAX_SIZE_REACHED", 82: "FENCED_INSTANCE_ID",
	83: "ELIGIBLE_LEADERS_NOT_AVAILABLE", 84: "ELECTION_NOT_NEEDED",
	85: "NO_REASSIGNMENT_IN_PROGRESS", 86: "GROUP_SUBSCRIBED_TO_TOPIC", 87: "INVALID_RECORD",
	88: "UNSTABLE_OFFSET_COMMIT", 89: "THROTTLING_QUOTA_EXCEEDED", 90: "PRODUCER_FENCED",
	100: "UNKNOWN_TOPIC_ID",
}

// errorName is an error's stable name: a broker error by Kafka's name, sarama's own errors
// by their Go name, anything else by its type.
func errorName(err error) string {
	var ke sarama.KError
	if errors.As(err, &ke) {
		if name, ok := kafkaErrors[ke]; ok {
			return name
		}
		return "KAFKA_ERROR_" + itoa(int64(ke))
	}
	for _, e := range []struct {
		err  error
		name string
	}{
		{sarama.ErrOutOfBrokers, "ErrOutOfBrokers"},
		{sarama.ErrNotConnected, "ErrNotConnected"},
		{sarama.ErrShuttingDown, "ErrShuttingDown"},
		{sarama.ErrClosedClient, "ErrClosedClient"},
		{sarama.ErrIncompleteResponse, "ErrIncompleteResponse"},
		{sarama.ErrInvalidPartition, "ErrInvalidPartition"},
		{sarama.ErrBrokerNotFound, "ErrBrokerNotFound"},
		{sarama.ErrInsufficientData, "ErrInsufficientData"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	var ce sarama.ConfigurationError
	if errors.As(err, &ce) {
		return "ConfigurationError"
	}
	return otherName(err)
}

// ------------------------------------------------------------------ consumer

type item struct {
	m    *sarama.ConsumerMessage
	sess sarama.ConsumerGroupSession // nil in assign mode
}

// saramaConsumer reads from sarama's channels into one queue that poll takes from: sarama
// has no poll, the protocol's reads are numbered by poll.
type saramaConsumer struct {
	msgs     chan item
	ctx      context.Context
	cancel   context.CancelFunc
	consumer sarama.Consumer
	group    sarama.ConsumerGroup
	wg       sync.WaitGroup
}

func newConsumer(s *spec) consumerClient {
	cfg := baseConfig(s, "consumer")
	cfg.Consumer.Return.Errors = true
	if level, ok := s.take("isolation.level"); ok {
		switch level {
		case "read_committed":
			cfg.Consumer.IsolationLevel = sarama.ReadCommitted
		case "read_uncommitted":
			cfg.Consumer.IsolationLevel = sarama.ReadUncommitted
		default:
			fatal("config isolation.level=%s: not read_committed or read_uncommitted", level)
		}
	}
	for _, k := range []string{"fetch.max.wait.ms", "fetch.wait.max.ms"} {
		if d, ok := s.takeMs(k); ok {
			cfg.Consumer.MaxWaitTime = d
		}
	}
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	if r, ok := s.take("auto.offset.reset"); ok && (r == "latest" || r == "largest") {
		cfg.Consumer.Offsets.Initial = sarama.OffsetNewest
	}
	addrs := strings.Split(s.str("bootstrap"), ",")
	topic := s.str("topic")
	ctx, cancel := context.WithCancel(context.Background())
	c := &saramaConsumer{msgs: make(chan item, 1024), ctx: ctx, cancel: cancel}
	if s.str("mode") == "assign" {
		if err := cfg.Validate(); err != nil {
			fatal("sarama consumer: %v", err)
		}
		consumer, ok := connect("sarama consumer", func() (sarama.Consumer, error) {
			return sarama.NewConsumer(addrs, cfg)
		})
		if !ok {
			return c
		}
		c.consumer = consumer
		for _, p := range s.partitions() {
			c.wg.Add(1)
			go c.readPartition(topic, p)
		}
		return c
	}
	group, _ := s.take("group.id")
	if group == "" {
		fatal("config group.id: a subscribe consumer needs one")
	}
	if proto, _ := s.take("group.protocol"); proto == "consumer" {
		fatal("config group.protocol=consumer: sarama has no KIP-848 consumer")
	} else if proto != "" && proto != "classic" {
		fatal("config group.protocol=%s: not classic or consumer", proto)
	}
	if d, ok := s.takeMs("session.timeout.ms"); ok {
		cfg.Consumer.Group.Session.Timeout = d
	}
	if d, ok := s.takeMs("heartbeat.interval.ms"); ok {
		cfg.Consumer.Group.Heartbeat.Interval = d
	}
	if b, ok := s.takeBool("enable.auto.commit"); ok {
		cfg.Consumer.Offsets.AutoCommit.Enable = b
	}
	if d, ok := s.takeMs("auto.commit.interval.ms"); ok {
		cfg.Consumer.Offsets.AutoCommit.Interval = d
	}
	if err := cfg.Validate(); err != nil {
		fatal("sarama consumer: %v", err)
	}
	g, ok := connect("sarama consumer group", func() (sarama.ConsumerGroup, error) {
		return sarama.NewConsumerGroup(addrs, group, cfg)
	})
	if !ok {
		return c
	}
	c.group = g
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		for err := range g.Errors() {
			warn("group: %v", err)
		}
	}()
	go func() {
		defer c.wg.Done()
		// Consume returns at the end of each session (a rebalance): join again
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{topic}, handler{c}); err != nil {
				warn("group consume: %v", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}
	}()
	return c
}

// readPartition forwards one partition from the beginning. sarama shuts a partition
// consumer down when its offset is out of range (the log was truncated under it): start
// again from the beginning, as auto.offset.reset=earliest would.
func (c *saramaConsumer) readPartition(topic string, p int32) {
	defer c.wg.Done()
	for c.ctx.Err() == nil {
		pc, err := c.consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			warn("partition %d: %v (trying again)", p, err)
			select {
			case <-c.ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		go func() {
			for e := range pc.Errors() {
				warn("partition %d: %v", p, e.Err)
			}
		}()
		if c.forward(c.ctx, pc.Messages(), nil) {
			// stopping: close it (the consumer's Close wants its children closed first)
			// and let its messages run out
			pc.AsyncClose()
			for range pc.Messages() {
			}
		}
	}
}

// forward copies messages into the poll queue until they end (false) or ctx is done (true).
func (c *saramaConsumer) forward(ctx context.Context, msgs <-chan *sarama.ConsumerMessage,
	sess sarama.ConsumerGroupSession) bool {
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return false
			}
			select {
			case c.msgs <- item{m, sess}:
			case <-ctx.Done():
				return true
			}
		case <-ctx.Done():
			return true
		}
	}
}

type handler struct{ c *saramaConsumer }

func claims(sess sarama.ConsumerGroupSession) string {
	var b []string
	for t, ps := range sess.Claims() {
		for _, p := range ps {
			b = append(b, t+":"+itoa(int64(p)))
		}
	}
	return strings.Join(b, ",")
}

// sarama has no callback for lost partitions: a session that ends, whatever ended it, is
// a revoke.
func (h handler) Setup(sess sarama.ConsumerGroupSession) error {
	out.line("rebalance", "assigned", polls.Load(), claims(sess))
	return nil
}

func (h handler) Cleanup(sess sarama.ConsumerGroupSession) error {
	out.line("rebalance", "revoked", polls.Load(), claims(sess))
	return nil
}

func (h handler) ConsumeClaim(sess sarama.ConsumerGroupSession,
	claim sarama.ConsumerGroupClaim) error {
	h.c.forward(sess.Context(), claim.Messages(), sess)
	return nil
}

func (c *saramaConsumer) poll(timeout time.Duration, max int) ([]record, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var recs []record
	take := func(it item) {
		recs = append(recs, record{it.m.Partition, it.m.Offset, it.m.Value})
		if it.sess != nil {
			it.sess.MarkMessage(it.m, "") // committed by the auto-commit, as a poll's are
		}
	}
	select {
	case it := <-c.msgs:
		take(it)
	case <-timer.C:
		return nil, nil
	}
	for len(recs) < max {
		select {
		case it := <-c.msgs:
			take(it)
		default:
			return recs, nil
		}
	}
	return recs, nil
}

func (c *saramaConsumer) close() {
	c.cancel()
	if c.group != nil {
		if err := c.group.Close(); err != nil { // leaves, committing what was marked
			warn("close: %v", err)
		}
	}
	if c.consumer != nil {
		if err := c.consumer.Close(); err != nil {
			warn("close: %v", err)
		}
	}
	c.wg.Wait()
}
