// kafka-chaos's driver of Kafka's Java client (kafka-clients): one producer or one consumer,
// reporting every attempt, acknowledgement, error and read on stdout (attempts and
// acknowledgements as binary frames, the rest as lines) to the Python recorder that writes
// the run's history. The protocol (spec file, line kinds, frames, record codec)
// is contract/driver_protocol.py; runner/java_client.py builds this file against the
// kafka-clients version a run asks for.

import java.io.BufferedReader;
import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.StringJoiner;
import java.util.zip.CRC32;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.AppInfoParser;

public final class KcDriver {
    private static final byte[] MAGIC = "KC1|".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] PAD = "abcdefghijklmnopqrstuvwxyz0123456789"
            .getBytes(StandardCharsets.US_ASCII);

    private final Map<String, String> spec = new HashMap<>();
    private final Properties config = new Properties();
    // Bytes, not a Writer: the hot events are binary frames (contract/driver_protocol.py).
    private final BufferedOutputStream out = new BufferedOutputStream(
            new FileOutputStream(FileDescriptor.out), 1 << 16);
    private volatile boolean stop;
    /** A consumer told ``down`` (and not yet ``up``) on stdin: closed until then. */
    private volatile boolean down;
    // The thread inside send(): a callback it runs itself means the record was never queued.
    private volatile Thread sending;

    public static void main(String[] args) throws Exception {
        if (args.length == 4 && args[0].equals("--encode")) {
            byte[] v = encode(Integer.parseInt(args[1]), Long.parseLong(args[2]),
                    Integer.parseInt(args[3]));
            System.out.println(new String(v, StandardCharsets.US_ASCII));
            return;
        }
        if (args.length != 1) {
            System.err.println("usage: KcDriver SPEC | --encode PRODUCER SEQ SIZE");
            System.exit(2);
        }
        KcDriver d = new KcDriver(Path.of(args[0]));
        // a producer given an input topic is a consume-transform-produce loop (Pipeline):
        // the same producer lines, its records made from what its consumer reads
        int rc = !d.spec.get("role").equals("producer") ? d.consume()
                : d.spec.containsKey("input_topic") ? new Pipeline(d).run() : d.produce();
        System.exit(rc);
    }

    private KcDriver(Path specPath) throws IOException {
        for (String line : Files.readAllLines(specPath, StandardCharsets.UTF_8)) {
            int eq = line.indexOf('=');
            if (eq <= 0) {
                continue;
            }
            String key = line.substring(0, eq);
            String value = line.substring(eq + 1);
            if (key.startsWith("config.")) {
                config.setProperty(key.substring("config.".length()), value);
            } else {
                spec.put(key, value);
            }
        }
    }

    // ------------------------------------------------------------------ the codec
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    /** The last padding made (its length is the value's size less its header's): one per
     * record cost as much as the send; it changes only when seq gains a digit. */
    private static volatile byte[] lastPad = new byte[0];

    /** The value of record seq of producer, padded to size bytes (workloads/record.py).
     * Written byte by byte (no String.format, no concatenation): it runs once a record. */
    static byte[] encode(int producer, long seq, int size) {
        byte[] ident = new byte[42];
        int identLen = digits(ident, digits(ident, 0, producer), seq);
        int n = Math.max(0, size - (MAGIC.length + identLen + 9));
        byte[] pad = lastPad;
        if (pad.length != n) {
            pad = new byte[n];
            for (int i = 0; i < n; i++) {
                pad[i] = PAD[i % PAD.length];
            }
            lastPad = pad;
        }
        CRC32 crc = new CRC32();
        crc.update(ident, 0, identLen);
        crc.update(pad);
        long c = crc.getValue();
        byte[] v = new byte[MAGIC.length + identLen + 9 + n];
        System.arraycopy(MAGIC, 0, v, 0, MAGIC.length);
        int at = MAGIC.length;
        System.arraycopy(ident, 0, v, at, identLen);
        at += identLen;
        for (int shift = 28; shift >= 0; shift -= 4) {
            v[at++] = HEX[(int) (c >>> shift) & 0xf];
        }
        v[at++] = '|';
        System.arraycopy(pad, 0, v, at, n);
        return v;
    }

    /** Writes n's decimal digits and a '|' at b[at]; returns the index after them. */
    private static int digits(byte[] b, int at, long n) {
        if (n < 0) { // the codec's ids are never negative; kept exact all the same
            byte[] s = Long.toString(n).getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(s, 0, b, at, s.length);
            b[at + s.length] = '|';
            return at + s.length + 1;
        }
        int len = 1;
        for (long x = n; x >= 10; x /= 10) {
            len++;
        }
        for (int i = at + len - 1; i >= at; i--) {
            b[i] = (byte) ('0' + n % 10);
            n /= 10;
        }
        b[at + len] = '|';
        return at + len + 1;
    }

    // ------------------------------------------------------------------ output
    private static long nowNs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    private void line(Object... fields) {
        StringJoiner j = new StringJoiner("\t");
        for (Object f : fields) {
            j.add(String.valueOf(f));
        }
        byte[] b = (j + "\n").getBytes(StandardCharsets.UTF_8);
        synchronized (out) {
            try {
                out.write(b);
            } catch (IOException e) {
                stop = true; // the recorder is gone: nobody records what we do
            }
        }
    }

    /** Frame tags (contract/driver_protocol.py FRAMES). */
    private static final byte SENT = 1;
    private static final byte ACK = 2;
    private static final ThreadLocal<byte[]> FRAME = ThreadLocal.withInitial(() -> new byte[25]);

    /** A ``sent`` or ``ack`` event (two a record, one of them on the client's I/O thread) as
     * its binary frame: a tag and three little-endian longs, no text to format or parse. */
    private void hot(byte tag, long a, long b, long c) {
        byte[] f = FRAME.get();
        f[0] = tag;
        putLong(f, 1, a);
        putLong(f, 9, b);
        putLong(f, 17, c);
        synchronized (out) {
            try {
                out.write(f, 0, f.length);
            } catch (IOException e) {
                stop = true; // the recorder is gone: nobody records what we do
            }
        }
    }

    private static void putLong(byte[] f, int at, long v) {
        for (int i = 0; i < 8; i++) {
            f[at + i] = (byte) (v >>> (8 * i));
        }
    }

    private void flushOut() {
        synchronized (out) {
            try {
                out.flush();
            } catch (IOException e) {
                stop = true;
            }
        }
    }

    /** Stops at stdin's end (the recorder closed it, or died); flushes stdout every 50 ms. */
    private void startHelpers() {
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String cmd;
                while ((cmd = in.readLine()) != null) {
                    // the end of input means stop; down/up hold a consumer closed; other
                    // lines are ignored
                    if (cmd.equals("down")) {
                        down = true;
                    } else if (cmd.equals("up")) {
                        down = false;
                    }
                }
            } catch (IOException e) {
                // as good as the end
            }
            stop = true;
        }, "kc-stdin");
        stdin.setDaemon(true);
        stdin.start();
        Thread flusher = new Thread(() -> {
            while (true) {
                flushOut();
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "kc-flush");
        flusher.setDaemon(true);
        flusher.start();
    }

    private List<Integer> partitions() {
        List<Integer> parts = new ArrayList<>();
        String raw = spec.getOrDefault("partitions", "");
        for (String p : raw.split(",")) {
            if (!p.isBlank()) {
                parts.add(Integer.parseInt(p.trim()));
            }
        }
        return parts;
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String errorName(Exception e) {
        return e.getClass().getSimpleName();
    }

    // ------------------------------------------------------------------ producer
    private KafkaProducer<byte[], byte[]> client;
    private Properties producerProps;
    private int producer;
    private int size;
    private double rate;
    private long start;
    private long durationNs;
    private long maxRecords;
    private long seq;
    private String topic;
    private List<Integer> parts;

    private boolean shouldStop() {
        return stop || System.nanoTime() - start >= durationNs
                || (maxRecords != 0 && seq >= maxRecords);
    }

    /** Sends the next record when it is due; false when the producer should stop, or when
     * send() threw: a closed or fatally failed client. */
    private boolean sendOne() throws InterruptedException {
        while (rate > 0) {
            long wait = start + (long) (seq * 1e9 / rate) - System.nanoTime();
            if (wait <= 0) {
                break;
            }
            Thread.sleep(Math.min(wait / 1_000_000, 100), (int) (wait % 1_000_000));
            if (shouldStop()) {
                return false;
            }
        }
        final long s = seq++;
        int part = parts.get((int) (s % parts.size()));
        hot(SENT, s, part, nowNs());
        sending = Thread.currentThread();
        try {
            client.send(new ProducerRecord<>(topic, part, null, encode(producer, s, size)),
                    (md, e) -> {
                        if (e == null) {
                            hot(ACK, s, md.hasOffset() ? md.offset() : -1, nowNs());
                        } else if (Thread.currentThread() == sending) {
                            line("refused", s, nowNs(), errorName(e));
                        } else {
                            line("error", s, nowNs(), errorName(e));
                        }
                    });
            return true;
        } catch (RuntimeException e) {
            line("refused", s, nowNs(), errorName(e)); // threw instead of calling back
            System.err.println("send: " + e);
            return false;
        } finally {
            sending = null;
        }
    }

    private int produce() {
        String name = spec.get("name");
        producer = Integer.parseInt(spec.get("producer"));
        rate = Double.parseDouble(spec.get("rate"));
        durationNs = (long) (Double.parseDouble(spec.get("duration_s")) * 1e9);
        maxRecords = Long.parseLong(spec.get("max_records"));
        size = Integer.parseInt(spec.get("record_size"));
        long closeMs = (long) (Double.parseDouble(spec.get("close_timeout_s")) * 1000);
        topic = spec.get("topic");
        parts = partitions();
        producerProps = new Properties();
        producerProps.putAll(config);
        producerProps.put("bootstrap.servers", spec.get("bootstrap"));
        producerProps.put("client.id", "kc-producer-" + name);
        producerProps.put("key.serializer", ByteArraySerializer.class.getName());
        producerProps.put("value.serializer", ByteArraySerializer.class.getName());
        startHelpers();
        line("hello", "java", AppInfoParser.getVersion());
        int rc = 0;
        client = new KafkaProducer<>(producerProps);
        start = System.nanoTime();
        try {
            if (producerProps.containsKey("transactional.id")) {
                new Transactions(this).run();
            } else {
                while (!shouldStop()) {
                    if (!sendOne()) {
                        // false at the producer's end, or when send() threw: a closed or
                        // fatally failed client (exit 3)
                        rc = shouldStop() ? 0 : 3;
                        break;
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            closeClient(closeMs);
            line("end");
            flushOut();
        }
        return rc;
    }

    private void closeClient(long ms) {
        line("call", "close", ms);
        try {
            client.close(Duration.ofMillis(ms));
        } catch (RuntimeException e) {
            System.err.println("close: " + e);
        }
        line("done");
    }

    /** N records a transaction, a share of them aborted; the outcome decides the rows.
     * As for librdkafka (workloads/txn_producer.py): a commit that timed out is retried,
     * never aborted (KAFKA-17754); a fenced or fatally failed client gives the outcome
     * unknown and a new client (initTransactions fences the old epoch). */
    private static final class Transactions {
        private static final long CALL_MS = 10_000;
        private final KcDriver d;
        private final int perTxn;
        private final double abortShare;
        private final long txnTimeoutMs;
        private final java.util.Random rng;
        private final String txnId;

        Transactions(KcDriver d) {
            this.d = d;
            perTxn = Integer.parseInt(d.spec.get("records_per_txn"));
            abortShare = Double.parseDouble(d.spec.get("abort_share"));
            txnTimeoutMs = Long.parseLong(d.producerProps.getProperty("transaction.timeout.ms",
                    "60000"));
            rng = new java.util.Random(Long.parseLong(d.spec.get("seed")) * 1_000_003L + d.producer);
            txnId = d.producerProps.getProperty("transactional.id");
        }

        void run() throws InterruptedException {
            long txnNo = 0;
            if (!init()) {
                return;
            }
            while (!d.shouldStop()) {
                boolean ok = one(txnNo++);
                if (!ok && !d.stop) {
                    System.err.println("recreating the transactional client");
                    d.closeClient(0);
                    d.client = new KafkaProducer<>(d.producerProps);
                    if (!init()) {
                        return;
                    }
                }
            }
        }

        private boolean init() throws InterruptedException {
            while (true) {
                d.line("call", "init_transactions", d.producerProps.getProperty("max.block.ms",
                        "60000"));
                try {
                    d.client.initTransactions();
                    return true;
                } catch (RuntimeException e) {
                    System.err.println("initTransactions: " + e);
                    if (d.stop) {
                        return false;
                    }
                    if (!(e instanceof org.apache.kafka.common.errors.TimeoutException)) {
                        d.closeClient(0);
                        d.client = new KafkaProducer<>(d.producerProps);
                    }
                    Thread.sleep(500);
                } finally {
                    d.line("done");
                }
            }
        }

        /** One transaction from begin to outcome; false when the client must be new. */
        private boolean one(long txnNo) throws InterruptedException {
            d.line("call", "begin_transaction", -1);
            try {
                d.client.beginTransaction();
            } catch (RuntimeException e) {
                System.err.println("beginTransaction: " + e);
                return false;
            } finally {
                d.line("done");
            }
            d.line("txn", txnId + ":" + txnNo);
            boolean wantAbort = rng.nextDouble() < abortShare;
            boolean sent = true;
            for (int i = 0; i < perTxn && !d.shouldStop() && sent; i++) {
                sent = d.sendOne(); // false: the transaction is in an error state
            }
            String outcome;
            boolean recreate;
            // Settled even when told to stop (as the librdkafka workload does): a commit that
            // times out after the stop is not retried, and its outcome is unknown.
            if (wantAbort) {
                flush();
                String[] r = abort();
                outcome = r[0];
                recreate = r[1] != null;
            } else {
                String[] r = commit();
                outcome = r[0];
                recreate = r[1] != null;
            }
            d.line("txn-outcome", outcome);
            return !recreate;
        }

        private void flush() {
            // delivered first, so the aborted records are in the log a reader must skip
            d.line("call", "flush", d.producerProps.getProperty("delivery.timeout.ms",
                    "120000"));
            try {
                d.client.flush();
            } catch (RuntimeException e) {
                System.err.println("flush before abort: " + e);
            } finally {
                d.line("done");
            }
        }

        private static boolean fatal(RuntimeException e) {
            return e instanceof org.apache.kafka.common.errors.ProducerFencedException
                    || e instanceof org.apache.kafka.common.errors.OutOfOrderSequenceException
                    || e instanceof org.apache.kafka.common.errors.InvalidProducerEpochException
                    || e instanceof org.apache.kafka.common.errors.AuthorizationException
                    || e instanceof org.apache.kafka.common.errors.UnsupportedVersionException
                    || e instanceof IllegalStateException;
        }

        /** {outcome, non-null when the client must be new}. */
        private String[] commit() {
            long bound = System.nanoTime() + txnTimeoutMs * 1_000_000L;
            boolean timedOut = false;
            while (true) {
                d.line("call", "commit_transaction", d.producerProps.getProperty(
                        "max.block.ms", "60000"));
                try {
                    d.client.commitTransaction();
                    return new String[] {"committed", null};
                } catch (org.apache.kafka.common.errors.TimeoutException e) {
                    System.err.println("commitTransaction: " + e);
                    timedOut = true;
                    if (System.nanoTime() < bound && !d.stop) {
                        continue; // retried, never aborted after a timeout (KAFKA-17754)
                    }
                    return new String[] {"unknown", "timed out"};
                } catch (RuntimeException e) {
                    System.err.println("commitTransaction: " + e);
                    if (fatal(e) || timedOut) {
                        return new String[] {"unknown", "fatal"};
                    }
                    return abort(); // an abortable error
                } finally {
                    d.line("done");
                }
            }
        }

        private String[] abort() {
            long bound = System.nanoTime() + txnTimeoutMs * 1_000_000L;
            while (true) {
                d.line("call", "abort_transaction", d.producerProps.getProperty(
                        "max.block.ms", "60000"));
                try {
                    d.client.abortTransaction();
                    return new String[] {"aborted", null};
                } catch (org.apache.kafka.common.errors.TimeoutException e) {
                    System.err.println("abortTransaction: " + e);
                    if (System.nanoTime() < bound && !d.stop) {
                        continue;
                    }
                    return new String[] {"unknown", "timed out"};
                } catch (RuntimeException e) {
                    System.err.println("abortTransaction: " + e);
                    return new String[] {"unknown", "fatal"};
                } finally {
                    d.line("done");
                }
            }
        }
    }

    // ------------------------------------------------------------------ consume-transform-produce
    /** A consume-transform-produce loop: a producer whose spec names an ``input_topic``.
     * A group consumer (read_committed, no auto-commit) reads the input; each poll's records
     * become one transaction that writes one output a record (its value the application's,
     * its identity in the ``kc-id`` header, its source's in ``kc-src``) and sends the
     * consumer's positions with ``sendOffsetsToTransaction``. Every ``abort_every``-th
     * transaction is aborted instead of committed: an application failure the loop
     * survives. With ``rewind=1`` the loop then seeks every assigned partition back to its
     * committed offset, as the client's documentation asks of an application; without,
     * it polls on from where the consumer was (KAFKA-17582: an abort does not move the
     * consumer). It stops once a poll returns nothing and every assigned partition's
     * position is at its end, or at ``duration_s``. The stdout lines are a transactional
     * producer's (contract/driver_protocol.py); what the loop decided (each abort with
     * the consumer's positions and committed offsets, each rewind, each rebalance) goes to
     * stderr, lines starting ``ctp:``. */
    private static final class Pipeline {
        private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
        private final KcDriver d;
        private final String input;
        private final int abortEvery;
        private final boolean rewind;
        private final long pollMs;
        private final Properties consumerProps = new Properties();
        private KafkaConsumer<byte[], byte[]> consumer;

        Pipeline(KcDriver d) {
            this.d = d;
            input = d.spec.get("input_topic");
            abortEvery = Integer.parseInt(d.spec.getOrDefault("abort_every", "0"));
            rewind = d.spec.getOrDefault("rewind", "0").equals("1");
            pollMs = Long.parseLong(d.spec.getOrDefault("poll_timeout_ms", "500"));
            consumerProps.put("bootstrap.servers", d.spec.get("bootstrap"));
            consumerProps.put("client.id", "kc-ctp-" + d.spec.get("name"));
            consumerProps.put("group.id", d.spec.get("group"));
            consumerProps.put("isolation.level", "read_committed");
            consumerProps.put("enable.auto.commit", "false");
            consumerProps.put("auto.offset.reset", "earliest");
            consumerProps.put("max.poll.records", d.spec.getOrDefault("max_poll_records", "10"));
            consumerProps.put("key.deserializer", ByteArrayDeserializer.class.getName());
            consumerProps.put("value.deserializer", ByteArrayDeserializer.class.getName());
        }

        int run() {
            d.producer = Integer.parseInt(d.spec.get("producer"));
            d.durationNs = (long) (Double.parseDouble(d.spec.get("duration_s")) * 1e9);
            long closeMs = (long) (Double.parseDouble(d.spec.get("close_timeout_s")) * 1000);
            d.topic = d.spec.get("topic");
            d.parts = d.partitions();
            d.producerProps = new Properties();
            d.producerProps.putAll(d.config);
            d.producerProps.put("bootstrap.servers", d.spec.get("bootstrap"));
            d.producerProps.put("client.id", "kc-producer-" + d.spec.get("name"));
            d.producerProps.put("key.serializer", ByteArraySerializer.class.getName());
            d.producerProps.put("value.serializer", ByteArraySerializer.class.getName());
            d.startHelpers();
            d.line("hello", "java", AppInfoParser.getVersion());
            d.client = new KafkaProducer<>(d.producerProps);
            consumer = new KafkaConsumer<>(consumerProps);
            d.start = System.nanoTime();
            int rc = 0;
            try {
                d.line("call", "init_transactions", -1);
                try {
                    d.client.initTransactions();
                } finally {
                    d.line("done");
                }
                consumer.subscribe(List.of(input), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                        System.err.println("ctp: revoked " + tps);
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                        System.err.println("ctp: assigned " + tps);
                    }
                });
                loop();
            } catch (RuntimeException e) {
                // no fault is expected here: an error ends the loop (exit 3), and the
                // transaction it was in stays without an outcome (the recorder's unknown)
                System.err.println("ctp: " + e);
                rc = 3;
            } finally {
                try {
                    consumer.close(Duration.ofSeconds(10));
                } catch (RuntimeException e) {
                    System.err.println("ctp: consumer close: " + e);
                }
                d.closeClient(closeMs);
                d.line("end");
                d.flushOut();
            }
            return rc;
        }

        private void loop() {
            long txnNo = 0;
            String txnId = d.producerProps.getProperty("transactional.id");
            while (!d.stop && System.nanoTime() - d.start < d.durationNs) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(pollMs));
                if (records.isEmpty()) {
                    if (atEnd()) {
                        System.err.println("ctp: at the input's end after " + txnNo
                                + " transactions");
                        return;
                    }
                    continue;
                }
                txnNo++;
                d.line("call", "begin_transaction", -1);
                try {
                    d.client.beginTransaction();
                } finally {
                    d.line("done");
                }
                d.line("txn", txnId + ":" + txnNo);
                List<String> sources = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    sources.add(send(r));
                }
                Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
                for (TopicPartition tp : consumer.assignment()) {
                    positions.put(tp, new OffsetAndMetadata(consumer.position(tp)));
                }
                d.line("call", "send_offsets_to_transaction", -1);
                try {
                    d.client.sendOffsetsToTransaction(positions, consumer.groupMetadata());
                } finally {
                    d.line("done");
                }
                if (abortEvery > 0 && txnNo % abortEvery == 0) {
                    abort(txnNo, sources);
                } else {
                    d.line("call", "commit_transaction", -1);
                    try {
                        d.client.commitTransaction();
                    } finally {
                        d.line("done");
                    }
                    d.line("txn-outcome", "committed");
                }
            }
            System.err.println("ctp: stopped before the input's end after " + txnNo
                    + " transactions");
        }

        /** The injected failure: the transaction's outputs are written (flushed, so the
         * log holds what read_committed readers must skip), then aborted. */
        private void abort(long txnNo, List<String> sources) {
            d.line("call", "flush", -1);
            try {
                d.client.flush();
            } finally {
                d.line("done");
            }
            d.line("call", "abort_transaction", -1);
            try {
                d.client.abortTransaction();
            } finally {
                d.line("done");
            }
            d.line("txn-outcome", "aborted");
            Map<TopicPartition, Long> after = new TreeMapByName();
            for (TopicPartition tp : consumer.assignment()) {
                after.put(tp, consumer.position(tp));
            }
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(
                    consumer.assignment());
            System.err.println("ctp: aborted txn " + txnNo + " sources "
                    + String.join(",", sources) + " position " + after
                    + " committed " + offsets(committed));
            if (!rewind) {
                return;
            }
            for (TopicPartition tp : consumer.assignment()) {
                OffsetAndMetadata at = committed.get(tp);
                if (at == null) { // nothing committed yet: where auto.offset.reset starts
                    consumer.seekToBeginning(List.of(tp));
                } else {
                    consumer.seek(tp, at);
                }
            }
            System.err.println("ctp: rewound to " + offsets(committed));
        }

        private static Map<TopicPartition, Long> offsets(
                Map<TopicPartition, OffsetAndMetadata> committed) {
            Map<TopicPartition, Long> out = new TreeMapByName();
            committed.forEach((tp, om) -> out.put(tp, om == null ? -1L : om.offset()));
            return out;
        }

        /** One output of input r, sent in the open transaction; returns r's identity. */
        private String send(ConsumerRecord<byte[], byte[]> r) {
            String src = identity(r);
            byte[] value = ("out-of|" + src).getBytes(StandardCharsets.US_ASCII);
            final long s = d.seq++;
            int part = d.parts.get((int) (s % d.parts.size()));
            ProducerRecord<byte[], byte[]> out = new ProducerRecord<>(d.topic, part, null, value);
            out.headers().add("kc-id", (d.producer + "|" + s + "|" + crcHex(value))
                    .getBytes(StandardCharsets.US_ASCII));
            if (!src.isEmpty()) {
                out.headers().add("kc-src", src.getBytes(StandardCharsets.US_ASCII));
            }
            d.hot(SENT, s, part, nowNs());
            d.client.send(out, (md, e) -> {
                if (e == null) {
                    d.hot(ACK, s, md.hasOffset() ? md.offset() : -1, nowNs());
                } else {
                    d.line("error", s, nowNs(), errorName(e));
                }
            });
            return src;
        }

        /** ``<producer>|<seq>`` of an input record: its ``kc-id`` header (a recorded
         * client's), else its value's codec (a workload's); "" when it has neither. */
        private static String identity(ConsumerRecord<byte[], byte[]> r) {
            Header h = r.headers().lastHeader("kc-id");
            String raw = h != null && h.value() != null
                    ? new String(h.value(), StandardCharsets.US_ASCII)
                    : r.value() != null && startsWith(r.value(), MAGIC)
                    ? new String(r.value(), MAGIC.length, r.value().length - MAGIC.length,
                            StandardCharsets.US_ASCII)
                    : "";
            String[] f = raw.split("\\|", 3);
            return f.length >= 2 ? f[0] + "|" + f[1] : "";
        }

        private static boolean startsWith(byte[] v, byte[] prefix) {
            if (v.length < prefix.length) {
                return false;
            }
            for (int i = 0; i < prefix.length; i++) {
                if (v[i] != prefix[i]) {
                    return false;
                }
            }
            return true;
        }

        private static String crcHex(byte[] value) {
            CRC32 crc = new CRC32();
            crc.update(value);
            long c = crc.getValue();
            byte[] hex = new byte[8];
            for (int i = 0; i < 8; i++) {
                hex[i] = HEX[(int) (c >>> (28 - 4 * i)) & 0xf];
            }
            return new String(hex, StandardCharsets.US_ASCII);
        }

        /** Whether the consumer holds partitions and its position is at the end of each
         * (read_committed: the last stable offset). */
        private boolean atEnd() {
            if (consumer.assignment().isEmpty()) {
                return false;
            }
            Map<TopicPartition, Long> ends = consumer.endOffsets(consumer.assignment());
            for (TopicPartition tp : consumer.assignment()) {
                if (consumer.position(tp) < ends.getOrDefault(tp, Long.MAX_VALUE)) {
                    return false;
                }
            }
            return true;
        }

        /** Partitions in topic and number order: stable log lines. */
        private static final class TreeMapByName extends java.util.TreeMap<TopicPartition, Long> {
            TreeMapByName() {
                super(java.util.Comparator.comparing(TopicPartition::topic)
                        .thenComparingInt(TopicPartition::partition));
            }
        }
    }

    // ------------------------------------------------------------------ consumer
    private int consume() {
        String name = spec.get("name");
        String topic = spec.get("topic");
        boolean assign = spec.get("mode").equals("assign");
        // restart: alone in its group (the spec's group.id says so); once caught up (a poll
        // returned nothing, or the last fetch left no lag) and restart_interval_s has passed, it closes (committing) and,
        // after restart_pause_s, a new consumer resumes at the committed offsets
        boolean restart = spec.get("mode").equals("restart");
        long intervalNs = (long) (Double.parseDouble(spec.getOrDefault("restart_interval_s", "0"))
                * 1e9);
        long pauseMs = (long) (Double.parseDouble(spec.getOrDefault("restart_pause_s", "0"))
                * 1000);
        // restart_close_delay_s: the application's last work before it closes (no poll)
        long closeDelayMs = (long) (Double.parseDouble(
                spec.getOrDefault("restart_close_delay_s", "0")) * 1000);
        long pollMs = Long.parseLong(spec.get("poll_timeout_ms"));
        Properties props = new Properties();
        props.putAll(config);
        if (assign) { // no group at all: nothing committed, nothing rebalanced
            for (String k : List.of("group.id", "enable.auto.commit", "auto.commit.interval.ms",
                    "session.timeout.ms", "heartbeat.interval.ms", "group.protocol")) {
                props.remove(k);
            }
        }
        props.put("bootstrap.servers", spec.get("bootstrap"));
        props.put("client.id", "kc-consumer-" + name);
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        startHelpers();
        line("hello", "java", AppInfoParser.getVersion());
        Base64.Encoder b64 = Base64.getEncoder();
        long[] polls = {0};
        KafkaConsumer<byte[], byte[]> client = new KafkaConsumer<>(props);
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                say("revoked", tps);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                say("assigned", tps);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> tps) {
                say("lost", tps);
            }

            private void say(String what, Collection<TopicPartition> tps) {
                rebalanceLine(what, polls[0], tps);
            }
        };
        int rc = 0;
        long started = System.nanoTime();
        try {
            if (assign) {
                List<TopicPartition> tps = new ArrayList<>();
                for (int p : partitions()) {
                    tps.add(new TopicPartition(topic, p));
                }
                client.assign(tps);
                client.seekToBeginning(tps);
            } else {
                client.subscribe(List.of(topic), listener);
            }
            while (!stop) {
                polls[0]++;
                ConsumerRecords<byte[], byte[]> records;
                line("call", "consume", pollMs);
                try {
                    records = client.poll(Duration.ofMillis(pollMs));
                } catch (WakeupException e) {
                    break;
                } catch (RuntimeException e) {
                    // a fault's consequence the client reports (e.g. a commit failed): go on
                    System.err.println("poll: " + e);
                    sleepQuietly(100); // not a busy loop on an error that persists
                    continue;
                } finally {
                    line("done");
                }
                long now = nowNs();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    byte[] v = r.value();
                    line("read", polls[0], now, r.partition(), r.offset(),
                            v == null ? "" : b64.encodeToString(v));
                }
                boolean held = !assign && down;
                if (held || (restart && System.nanoTime() - started >= intervalNs
                        && caughtUp(client, records.isEmpty()))) {
                    rebalanceLine("restart", polls[0], client.assignment());
                    long lingerUntil = System.currentTimeMillis() + (held ? 0 : closeDelayMs);
                    while (!stop && System.currentTimeMillis() < lingerUntil) {
                        sleepQuietly(50);
                    }
                    closeConsumer(client);
                    long until = System.currentTimeMillis() + pauseMs;
                    if (held) {
                        line("down", nowNs());
                    }
                    while (!stop && (held ? down : System.currentTimeMillis() < until)) {
                        sleepQuietly(50); // a restart takes time; the producers write on
                    }
                    client = new KafkaConsumer<>(props);
                    client.subscribe(List.of(topic), listener);
                    started = System.nanoTime();
                }
            }
        } catch (RuntimeException e) {
            System.err.println("consumer: " + e);
            rc = 3;
        } finally {
            closeConsumer(client);
            line("end");
            flushOut();
        }
        return rc;
    }

    /** Whether a consumer holds partitions and has read all they had at its last fetch:
     * its poll returned nothing, or no partition of it lags (the lag its fetches saw). */
    private static boolean caughtUp(KafkaConsumer<byte[], byte[]> client, boolean idle) {
        if (client.assignment().isEmpty()) {
            return false;
        }
        if (idle) {
            return true;
        }
        for (TopicPartition tp : client.assignment()) {
            java.util.OptionalLong lag = client.currentLag(tp);
            if (lag.isEmpty() || lag.getAsLong() > 0) {
                return false;
            }
        }
        return true;
    }

    /** Closes a consumer (a group member commits its offsets as it goes). */
    private void closeConsumer(KafkaConsumer<byte[], byte[]> client) {
        line("call", "close", 10_000);
        try {
            client.close(Duration.ofSeconds(10));
        } catch (RuntimeException e) {
            System.err.println("close: " + e);
        }
        line("done");
    }

    private void rebalanceLine(String what, long poll, Collection<TopicPartition> tps) {
        StringJoiner j = new StringJoiner(",");
        for (TopicPartition tp : tps) {
            j.add(tp.topic() + ":" + tp.partition());
        }
        line("rebalance", what, poll, j.toString());
    }
}
