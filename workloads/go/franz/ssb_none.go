//go:build !kc_server_side_balancer

package main

import "github.com/twmb/franz-go/pkg/kgo"

// serverSideBalancer: franz-go before 1.22.0 has no public KIP-848 opt-in.
func serverSideBalancer() (kgo.Opt, bool) { return nil, false }
