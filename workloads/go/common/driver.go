// Shared part of kafka-chaos's Go client drivers (franz-go, sarama): the spec, the record
// codec, the events on stdout (sent/ack as binary frames, the rest as lines), the stop
// signal (stdin's end) and the producer's and consumer's loops. runner/go_client.py copies this file beside one client's main.go and
// builds them as one program; the client's file supplies clientName, clientModule,
// newProducer and newConsumer. The protocol is contract/driver_protocol.py.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"os"
	"os/signal"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ------------------------------------------------------------------ the codec

var (
	magic   = []byte("KC1|")
	padding = []byte("abcdefghijklmnopqrstuvwxyz0123456789")
)

// encode is the value of record seq of producer, padded to size bytes (workloads/record.py).
func encode(producer int, seq int64, size int) []byte {
	ident := []byte(strconv.Itoa(producer) + "|" + strconv.FormatInt(seq, 10) + "|")
	n := size - (len(magic) + len(ident) + 9)
	if n < 0 {
		n = 0
	}
	pad := make([]byte, n)
	for i := range pad {
		pad[i] = padding[i%len(padding)]
	}
	crc := crc32.Update(crc32.ChecksumIEEE(ident), crc32.IEEETable, pad)
	v := make([]byte, 0, len(magic)+len(ident)+9+n)
	v = append(v, magic...)
	v = append(v, ident...)
	v = append(v, fmt.Sprintf("%08x|", crc)...)
	return append(v, pad...)
}

// ------------------------------------------------------------------ the spec

// spec is the driver's spec file: its values and the client's properties (config.*). The
// client's file takes the properties it maps; whatever is left is warned about, once.
type spec struct {
	values map[string]string
	config map[string]string
	taken  map[string]bool
}

func readSpec(path string) (*spec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := &spec{values: map[string]string{}, config: map[string]string{}, taken: map[string]bool{}}
	for _, line := range strings.Split(string(raw), "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok || key == "" {
			continue
		}
		if name, isConf := strings.CutPrefix(key, "config."); isConf {
			s.config[name] = value
		} else {
			s.values[key] = value
		}
	}
	return s, nil
}

func (s *spec) str(key string) string {
	v, ok := s.values[key]
	if !ok {
		fatal("spec: %s is missing", key)
	}
	return v
}

func (s *spec) float(key string) float64 {
	v, err := strconv.ParseFloat(s.str(key), 64)
	if err != nil {
		fatal("spec: %s: %v", key, err)
	}
	return v
}

func (s *spec) int(key string) int64 {
	v, err := strconv.ParseInt(s.str(key), 10, 64)
	if err != nil {
		fatal("spec: %s: %v", key, err)
	}
	return v
}

func (s *spec) partitions() []int32 {
	var out []int32
	for _, p := range strings.Split(s.values["partitions"], ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			fatal("spec: partitions: %v", err)
		}
		out = append(out, int32(n))
	}
	return out
}

// take returns property key (and whether it is set), marking it as mapped.
func (s *spec) take(key string) (string, bool) {
	v, ok := s.config[key]
	s.taken[key] = true
	return v, ok
}

// takeMs returns a property in milliseconds as a duration.
func (s *spec) takeMs(key string) (time.Duration, bool) {
	v, ok := s.take(key)
	if !ok {
		return 0, false
	}
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil {
		fatal("config %s=%q: not a number of milliseconds", key, v)
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}

func (s *spec) takeInt(key string) (int, bool) {
	v, ok := s.take(key)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		fatal("config %s=%q: not an integer", key, v)
	}
	return n, true
}

func (s *spec) takeBool(key string) (bool, bool) {
	v, ok := s.take(key)
	if !ok {
		return false, false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		fatal("config %s=%q: not true or false", key, v)
	}
	return b, true
}

// warnUntaken says on stderr which properties this client has no equivalent for: they are
// ignored, and the run's logs say so.
func (s *spec) warnUntaken() {
	var left []string
	for k := range s.config {
		if !s.taken[k] {
			left = append(left, k+"="+s.config[k])
		}
	}
	sort.Strings(left)
	for _, kv := range left {
		warn("config %s: no equivalent in %s, ignored", kv, clientName)
	}
}

func warn(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kc-driver: warning: "+format+"\n", args...)
}

// fatal is a setting the driver cannot run with: exit 2, before any record is written.
func fatal(format string, args ...any) {
	out.flush() // the hello line, if written: the recorder still learns the version
	fmt.Fprintf(os.Stderr, "kc-driver: "+format+"\n", args...)
	os.Exit(2)
}

// ------------------------------------------------------------------ output and stop

// output writes the event lines; safe for the clients' goroutines. Nothing follows end.
type output struct {
	mu    sync.Mutex
	w     *bufio.Writer
	ended bool
}

var (
	out      = &output{w: bufio.NewWriterSize(os.Stdout, 1<<16)}
	stopOnce sync.Once
	stopped  = make(chan struct{})
	// polls is the consumer's poll number, read by the clients' rebalance callbacks.
	polls atomic.Int64
	// bare (the spec's bare=1, benchmarks only): no sent or ack lines, the acknowledgements
	// counted instead and given in one bench line before end
	bare                           bool
	bareAcked, bareFirst, bareLast atomic.Int64
)

func stop() { stopOnce.Do(func() { close(stopped) }) }

func isStopped() bool {
	select {
	case <-stopped:
		return true
	default:
		return false
	}
}

func nowNs() int64 { return time.Now().UnixNano() }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Frame tags (contract/driver_protocol.py FRAMES): the two events of every record.
const (
	sentTag   = 1
	ackTag    = 2
	frameSize = 25
)

// sent reports record seq handed to the client for partition at invoke_ns.
func (o *output) sent(seq int64, partition int32, invokeNs int64) {
	if bare {
		bareFirst.CompareAndSwap(0, invokeNs)
		return
	}
	o.frame(sentTag, seq, int64(partition), invokeNs)
}

// ack reports record seq acknowledged at offset (-1: none given) at complete_ns.
func (o *output) ack(seq, offset, completeNs int64) {
	if bare {
		bareAcked.Add(1)
		bareLast.Store(completeNs)
		return
	}
	o.frame(ackTag, seq, offset, completeNs)
}

// frame writes a hot event as its binary frame: a tag and three little-endian int64s, no
// text to format (nor to parse in the recorder), no allocation.
func (o *output) frame(tag byte, a, b, c int64) {
	var f [frameSize]byte
	f[0] = tag
	binary.LittleEndian.PutUint64(f[1:], uint64(a))
	binary.LittleEndian.PutUint64(f[9:], uint64(b))
	binary.LittleEndian.PutUint64(f[17:], uint64(c))
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended {
		return
	}
	if _, err := o.w.Write(f[:]); err != nil {
		stop() // the recorder is gone: nobody records what we do
	}
}

func (o *output) line(fields ...any) {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('\t')
		}
		switch v := f.(type) {
		case string:
			b.WriteString(v)
		case int:
			b.WriteString(strconv.Itoa(v))
		case int32:
			b.WriteString(strconv.FormatInt(int64(v), 10))
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		default:
			fmt.Fprint(&b, v)
		}
	}
	b.WriteByte('\n')
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ended {
		return
	}
	if _, err := o.w.WriteString(b.String()); err != nil {
		stop() // the recorder is gone: nobody records what we do
	}
}

func (o *output) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.w.Flush(); err != nil {
		stop()
	}
}

// end writes the last line and flushes; later lines (a late callback) are dropped.
func (o *output) end() {
	o.line("end")
	o.mu.Lock()
	o.ended = true
	o.mu.Unlock()
	o.flush()
}

// startHelpers: stop at stdin's end (the recorder closed it, or died); flush every 50 ms.
func startHelpers() {
	// A write to a closed stdout must be an error (stop), not a SIGPIPE death.
	signal.Ignore(syscall.SIGPIPE)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stdin.Read(buf); err != nil {
				stop()
				return
			}
		}
	}()
	go func() {
		for {
			time.Sleep(50 * time.Millisecond)
			out.flush()
		}
	}()
}

// clientVersion is the client module's version this binary was built with, without the v.
func clientVersion() string {
	info, ok := debug.ReadBuildInfo()
	if ok {
		for _, m := range info.Deps {
			if m.Path == clientModule {
				if m.Replace != nil {
					m = m.Replace
				}
				return strings.TrimPrefix(m.Version, "v")
			}
		}
	}
	return "unknown"
}

// b64 is a value as a read line carries it ("" for none).
func b64(v []byte) string { return base64.StdEncoding.EncodeToString(v) }

// otherName names an error that is none of the client's own kinds: its type, or for a
// plain errors.New/fmt.Errorf value (whose type says nothing) its text, made one field.
func otherName(err error) string {
	t := strings.TrimPrefix(reflect.TypeOf(err).String(), "*")
	switch t {
	case "errors.errorString", "fmt.wrapError", "fmt.wrapErrors", "errors.joinError":
		msg := strings.Join(strings.Fields(err.Error()), " ")
		if len(msg) > 80 {
			msg = msg[:80]
		}
		return msg
	}
	return t
}

// ------------------------------------------------------------------ producer

// producerClient is one client's producer: send hands a record to it (its sent line is
// written; a send blocked in a full client gives up at producingOver), and the client's
// callbacks write its ack/error lines; close waits up to timeout for the outstanding ones
// and closes the client.
type producerClient interface {
	send(seq int64, partition int32, value []byte)
	close(timeout time.Duration)
}

// producingOver is closed when the producer's time is up or the driver is stopped: a send
// blocked in a full client gives up then.
var (
	producingOver = make(chan struct{})
	overOnce      sync.Once
)

func endProducing() { overOnce.Do(func() { close(producingOver) }) }

// pending counts records handed to a client without an outcome yet.
type pending struct{ n atomic.Int64 }

// wait returns when no record is outstanding or at the deadline.
func (p *pending) wait(deadline time.Time) {
	for p.n.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

func produce(s *spec) int {
	producer := int(s.int("producer"))
	rate := s.float("rate")
	duration := time.Duration(s.float("duration_s") * float64(time.Second))
	maxRecords := s.int("max_records")
	size := int(s.int("record_size"))
	closeTimeout := time.Duration(s.float("close_timeout_s") * float64(time.Second))
	parts := s.partitions()
	if len(parts) == 0 {
		fatal("spec: no partitions")
	}
	bare = s.values["bare"] == "1"
	startHelpers()
	out.line("hello", clientName, clientVersion())
	client := newProducer(s)
	s.warnUntaken()
	start := time.Now()
	time.AfterFunc(duration, endProducing)
	go func() {
		<-stopped
		endProducing()
	}()
	var seq int64
	for !isStopped() && time.Since(start) < duration && (maxRecords == 0 || seq < maxRecords) {
		if rate > 0 {
			due := start.Add(time.Duration(float64(seq) * 1e9 / rate))
			if wait := time.Until(due); wait > 0 {
				// at most 50 ms at a time: look at the stop conditions again
				time.Sleep(min(wait, 50*time.Millisecond))
				continue
			}
		}
		part := parts[seq%int64(len(parts))]
		out.sent(seq, part, nowNs())
		client.send(seq, part, encode(producer, seq, size))
		seq++
	}
	endProducing()
	out.line("call", "close", closeTimeout.Milliseconds())
	client.close(closeTimeout)
	out.line("done")
	if bare {
		out.line("bench", bareAcked.Load(), bareFirst.Load(), bareLast.Load())
	}
	out.end()
	return 0
}

// ------------------------------------------------------------------ consumer

type record struct {
	partition int32
	offset    int64
	value     []byte
}

// consumerClient is one client's consumer: poll returns the records read in up to timeout
// (at most max), its rebalance callbacks write rebalance lines; close leaves and closes.
type consumerClient interface {
	poll(timeout time.Duration, max int) ([]record, error)
	close()
}

// consumerCloseTimeout bounds close (leaving the group, a last commit), as the Java driver's.
const consumerCloseTimeout = 10 * time.Second

func consume(s *spec) int {
	pollTimeout := time.Duration(s.int("poll_timeout_ms")) * time.Millisecond
	maxPoll := 500
	if n, ok := s.takeInt("max.poll.records"); ok && n > 0 {
		maxPoll = n
	}
	if s.str("mode") == "assign" {
		// no group at all: nothing committed, nothing rebalanced
		for _, k := range []string{"group.id", "enable.auto.commit", "auto.commit.interval.ms",
			"session.timeout.ms", "heartbeat.interval.ms", "group.protocol"} {
			s.take(k)
		}
	}
	startHelpers()
	out.line("hello", clientName, clientVersion())
	client := newConsumer(s)
	s.warnUntaken()
	for !isStopped() {
		poll := polls.Add(1)
		out.line("call", "consume", pollTimeout.Milliseconds())
		recs, err := client.poll(pollTimeout, maxPoll)
		out.line("done")
		now := nowNs()
		for _, r := range recs {
			out.line("read", poll, now, r.partition, r.offset, b64(r.value))
		}
		if err != nil {
			// a fault's consequence the client reports: go on, but not in a busy loop
			fmt.Fprintf(os.Stderr, "kc-driver: poll: %v\n", err)
			time.Sleep(100 * time.Millisecond)
		}
	}
	out.line("call", "close", consumerCloseTimeout.Milliseconds())
	closed := make(chan struct{})
	go func() {
		client.close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(consumerCloseTimeout):
		fmt.Fprintln(os.Stderr, "kc-driver: close did not finish in time")
	}
	out.line("done")
	out.end()
	return 0
}

func main() {
	if len(os.Args) == 5 && os.Args[1] == "--encode" {
		p, err1 := strconv.Atoi(os.Args[2])
		seq, err2 := strconv.ParseInt(os.Args[3], 10, 64)
		size, err3 := strconv.Atoi(os.Args[4])
		if err1 != nil || err2 != nil || err3 != nil {
			fatal("--encode PRODUCER SEQ SIZE: integers")
		}
		os.Stdout.Write(append(encode(p, seq, size), '\n'))
		return
	}
	if len(os.Args) != 2 {
		fatal("usage: kc-driver SPEC | --encode PRODUCER SEQ SIZE")
	}
	s, err := readSpec(os.Args[1])
	if err != nil {
		fatal("spec: %v", err)
	}
	var rc int
	if s.str("role") == "producer" {
		rc = produce(s)
	} else {
		rc = consume(s)
	}
	os.Exit(rc)
}
