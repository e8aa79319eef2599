// kafka-chaos's driver of franz-go (github.com/twmb/franz-go, package kgo): one producer or
// one consumer, reporting every attempt, acknowledgement, error and read as a line on stdout
// to the Python recorder. Built with ../common/driver.go (the spec, codec, lines and loops)
// by runner/go_client.py against the franz-go version a run asks for.
package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	clientName   = "franz-go"
	clientModule = "github.com/twmb/franz-go"
)

func common(s *spec, role string) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(s.str("bootstrap"), ",")...),
		kgo.ClientID("kc-" + role + "-" + s.str("name")),
		// timestamped: the run's logs are read beside the faults' times
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, func() string {
			return time.Now().Format("2006-01-02T15:04:05.000000Z07:00 ")
		})),
	}
	// The Java client's client.id and bootstrap are ours; these are named but not for us.
	s.take("client.id")
	s.take("bootstrap.servers")
	return opts
}

// ------------------------------------------------------------------ producer

type franzProducer struct {
	cl    *kgo.Client
	topic string
	// ctx ends a Produce blocked on a full buffer, once the producer's time is up and the
	// close timeout has passed too (its record then fails with Canceled)
	ctx context.Context
	pending
}

func newProducer(s *spec) producerClient {
	opts := append(common(s, "producer"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.DefaultProduceTopic(s.str("topic")))
	acks, _ := s.take("acks")
	switch acks {
	case "all", "-1", "":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		fatal("config acks=%s: not 0, 1 or all", acks)
	}
	// franz-go is idempotent unless told otherwise, and only with acks=all: a producer with
	// other acks is not idempotent (the contract refuses idempotence with them).
	idem, set := s.takeBool("enable.idempotence")
	allAcks := acks == "all" || acks == "-1" || acks == ""
	if !allAcks && set && idem {
		fatal("config enable.idempotence=true needs acks=all")
	}
	idempotent := allAcks && (!set || idem)
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if n, ok := s.takeInt("max.in.flight.requests.per.connection"); ok {
		if idempotent {
			// fixed at 5 (1 against brokers before 1.0) while idempotent
			if n != 5 {
				warn("config max.in.flight.requests.per.connection=%d: franz-go's idempotent "+
					"producer always has up to 5 in flight per broker, ignored", n)
			}
		} else {
			opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(n))
		}
	}
	if d, ok := s.takeMs("linger.ms"); ok {
		opts = append(opts, kgo.ProducerLinger(d))
	}
	if d, ok := s.takeMs("delivery.timeout.ms"); ok && d > 0 {
		opts = append(opts, kgo.RecordDeliveryTimeout(d))
	}
	if d, ok := s.takeMs("request.timeout.ms"); ok && d > 0 {
		// the produce request's own timeout; franz-go adds RequestTimeoutOverhead (10 s)
		// to it for the read deadline
		opts = append(opts, kgo.ProduceRequestTimeout(d))
	}
	if n, ok := s.takeInt("retries"); ok {
		opts = append(opts, kgo.RecordRetries(n))
	}
	if n, ok := s.takeInt("batch.size"); ok && n > 0 {
		opts = append(opts, kgo.ProducerBatchMaxBytes(int32(n)))
	}
	if c, ok := s.take("compression.type"); ok {
		codec, known := map[string]kgo.CompressionCodec{
			"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
			"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(),
			"zstd": kgo.ZstdCompression(),
		}[c]
		if !known {
			fatal("config compression.type=%s: not none, gzip, snappy, lz4 or zstd", c)
		}
		opts = append(opts, kgo.ProducerBatchCompression(codec))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fatal("franz-go producer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	closeTimeout := time.Duration(s.float("close_timeout_s") * float64(time.Second))
	go func() {
		<-producingOver
		time.AfterFunc(closeTimeout, cancel)
	}()
	return &franzProducer{cl: cl, topic: s.str("topic"), ctx: ctx}
}

func (p *franzProducer) send(seq int64, partition int32, value []byte) {
	p.n.Add(1)
	// The record's own context is not p.ctx: that would also cancel it once buffered.
	r := &kgo.Record{Topic: p.topic, Partition: partition, Value: value,
		Context: context.Background()}
	// Produce blocks only while the client's buffer is full. Every outcome, also a record
	// refused before it was buffered, comes through the promise on the client's goroutine:
	// nothing tells one refused in Produce apart, so none is a refused line.
	p.cl.Produce(p.ctx, r, func(r *kgo.Record, err error) {
		if err != nil {
			out.line("error", seq, nowNs(), errorName(err))
		} else {
			out.ack(seq, r.Offset, nowNs()) // -1 when unknown (acks=0)
		}
		p.n.Add(-1)
	})
}

func (p *franzProducer) close(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	_ = p.cl.Flush(ctx) // the deadline passing is the only error
	p.wait(deadline)
	closed := make(chan struct{})
	go func() {
		// fails what is still buffered with ErrClientClosed (its promises run)
		p.cl.Close()
		close(closed)
	}()
	select {
	case <-closed:
		p.wait(time.Now().Add(time.Second))
	case <-time.After(5 * time.Second):
		warn("close did not finish in 5 s")
	}
}

// errorName is an error's stable name: the client's own sentinel errors by their Go name
// (checked first: ErrRecordTimeout wraps the last broker error), a broker error by Kafka's
// name (kerr), anything else by its type.
func errorName(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{
		{kgo.ErrRecordTimeout, "ErrRecordTimeout"},
		{kgo.ErrRecordRetries, "ErrRecordRetries"},
		{kgo.ErrMaxBuffered, "ErrMaxBuffered"},
		{kgo.ErrAborting, "ErrAborting"},
		{kgo.ErrClientClosed, "ErrClientClosed"},
		{context.Canceled, "Canceled"},
		{context.DeadlineExceeded, "DeadlineExceeded"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return otherName(err)
}

// ------------------------------------------------------------------ consumer

type franzConsumer struct {
	cl *kgo.Client
}

func parts(topics map[string][]int32) string {
	var b []string
	for t, ps := range topics {
		for _, p := range ps {
			b = append(b, t+":"+itoa(int64(p)))
		}
	}
	return strings.Join(b, ",")
}

func newConsumer(s *spec) consumerClient {
	topic := s.str("topic")
	opts := common(s, "consumer")
	if level, ok := s.take("isolation.level"); ok {
		switch level {
		case "read_committed":
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		case "read_uncommitted":
			opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
		default:
			fatal("config isolation.level=%s: not read_committed or read_uncommitted", level)
		}
	}
	// Both names: librdkafka's and Java's (the recorder passes Java's).
	for _, k := range []string{"fetch.max.wait.ms", "fetch.wait.max.ms"} {
		if d, ok := s.takeMs(k); ok {
			opts = append(opts, kgo.FetchMaxWait(d))
		}
	}
	reset := kgo.NewOffset().AtStart()
	if r, ok := s.take("auto.offset.reset"); ok && (r == "latest" || r == "largest") {
		reset = kgo.NewOffset().AtEnd()
	}
	if s.str("mode") == "assign" {
		// all the given partitions from the beginning, no group; a position out of range
		// (the log was truncated under it) goes back to the start, like earliest
		start := map[int32]kgo.Offset{}
		for _, p := range s.partitions() {
			start[p] = kgo.NewOffset().AtStart()
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	} else {
		group, _ := s.take("group.id")
		if group == "" {
			fatal("config group.id: a subscribe consumer needs one")
		}
		opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(reset))
		if proto, _ := s.take("group.protocol"); proto == "consumer" {
			opt, ok := serverSideBalancer()
			if !ok {
				fatal("config group.protocol=consumer: franz-go %s has no KIP-848 consumer "+
					"(ServerSideBalancer came in 1.22.0)", clientVersion())
			}
			opts = append(opts, opt)
		} else if proto != "" && proto != "classic" {
			fatal("config group.protocol=%s: not classic or consumer", proto)
		}
		if d, ok := s.takeMs("session.timeout.ms"); ok {
			opts = append(opts, kgo.SessionTimeout(d))
		}
		if d, ok := s.takeMs("heartbeat.interval.ms"); ok {
			opts = append(opts, kgo.HeartbeatInterval(d))
		}
		autoCommit := true
		if b, ok := s.takeBool("enable.auto.commit"); ok {
			autoCommit = b
		}
		if !autoCommit {
			opts = append(opts, kgo.DisableAutoCommit())
		}
		if d, ok := s.takeMs("auto.commit.interval.ms"); ok && autoCommit {
			opts = append(opts, kgo.AutoCommitInterval(d))
		}
		say := func(what string) func(context.Context, *kgo.Client, map[string][]int32) {
			return func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
				out.line("rebalance", what, polls.Load(), parts(m))
				// A revoke callback of ours replaces franz-go's default one, which commits
				// what was polled when autocommitting: do it as it would.
				if what == "revoked" && autoCommit {
					if err := cl.CommitUncommittedOffsets(ctx); err != nil {
						warn("commit on revoke: %v", err)
					}
				}
			}
		}
		opts = append(opts, kgo.OnPartitionsAssigned(say("assigned")),
			kgo.OnPartitionsRevoked(say("revoked")), kgo.OnPartitionsLost(say("lost")))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fatal("franz-go consumer: %v", err)
	}
	return &franzConsumer{cl: cl}
}

func (c *franzConsumer) poll(timeout time.Duration, max int) ([]record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	fetches := c.cl.PollRecords(ctx, max)
	var recs []record
	fetches.EachRecord(func(r *kgo.Record) {
		recs = append(recs, record{r.Partition, r.Offset, r.Value})
	})
	var errs []error
	for _, fe := range fetches.Errors() {
		// the poll's own timeout ends it as a fake fetch error: not an error
		if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
			continue
		}
		errs = append(errs, fe.Err)
	}
	return recs, errors.Join(errs...)
}

func (c *franzConsumer) close() { c.cl.Close() } // leaves the group, committing if autocommitting
