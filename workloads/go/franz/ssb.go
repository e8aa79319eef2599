//go:build kc_server_side_balancer

package main

import "github.com/twmb/franz-go/pkg/kgo"

// serverSideBalancer opts into KIP-848 groups (franz-go 1.22.0 on; runner/go_client.py sets
// the build tag for those versions). The default balancer, cooperative-sticky, is one the
// broker can stand in for ("uniform"); against a broker without KIP-848 the client stays
// classic.
func serverSideBalancer() (kgo.Opt, bool) { return kgo.ServerSideBalancer(), true }
