// Agent drives the real Apache Curator from Go interop tests (see the Go
// package internal/curator). It reads one command per line on stdin and
// answers each with one line on stdout; everything else it or its libraries
// print goes to stderr, so stdout carries nothing but the protocol.
//
// It is test scaffolding written against Curator's public API only: it must
// behave exactly as any Curator application would, so it never reaches into
// Curator internals or re-implements any recipe logic.
package zkrecipes;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicInteger;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicNumber;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedCountListener;
import org.apache.curator.framework.recipes.shared.SharedCountReader;
import org.apache.curator.framework.recipes.shared.SharedValue;
import org.apache.curator.framework.recipes.shared.SharedValueListener;
import org.apache.curator.framework.recipes.shared.SharedValueReader;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import com.fasterxml.jackson.databind.ObjectMapper;

public final class Agent {
    /** A command's handler; args excludes the command word. */
    interface Handler {
        void run(String[] args) throws Exception;
    }

    /** A command: how many arguments it takes and what they are (for errors). */
    private static final class Command {
        final int arity;
        final String usage;
        final Handler handler;

        Command(int arity, String usage, Handler handler) {
            this.arity = arity;
            this.usage = usage;
            this.handler = handler;
        }
    }

    /** A body of work run on an actor's thread. */
    interface Task {
        void run() throws Exception;
    }

    /**
     * One named holder of a recipe object, with a thread of its own. Curator's
     * locks belong to the thread that acquired them (InterProcessMutex is
     * reentrant per thread and release() must come from the acquiring thread),
     * so every command on one name runs on that name's single thread, in the
     * order the commands arrived. The recipe field is only touched on that
     * thread.
     */
    private final class Actor {
        final String name;
        final ExecutorService thread;
        Object recipe;
        String path;

        Actor(String name) {
            this.name = name;
            this.thread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "actor-" + name);
                t.setDaemon(true); // never keeps the JVM alive after quit or EOF
                return t;
            });
        }

        /** Runs task on this actor's thread; a failure answers "error <what>: ...". */
        void submit(String what, Task task) {
            thread.execute(() -> {
                try {
                    task.run();
                } catch (Throwable e) {
                    answerError(what, e);
                }
            });
        }

        /**
         * The actor's recipe object, made by create on first use. Asking for it
         * with another type or path is a test bug and fails loudly.
         */
        <T> T recipe(Class<T> type, String path, java.util.function.Supplier<T> create) {
            if (recipe == null) {
                recipe = create.get();
                this.path = path;
            }
            if (!type.isInstance(recipe) || !this.path.equals(path)) {
                throw new IllegalStateException(name + " is a " + recipe.getClass().getSimpleName()
                        + " on " + this.path + ", not a " + type.getSimpleName() + " on " + path);
            }
            return type.cast(recipe);
        }

        /** The existing recipe object, which must be of type. */
        <T> T existing(Class<T> type) {
            if (!type.isInstance(recipe)) {
                throw new IllegalStateException("no " + type.getSimpleName() + " named " + name);
            }
            return type.cast(recipe);
        }
    }

    private final CuratorFramework client;
    private final PrintStream out;
    private final Map<String, Command> commands = new HashMap<>();
    private final Map<String, Actor> actors = new ConcurrentHashMap<>();

    private Agent(CuratorFramework client, PrintStream out) {
        this.client = client;
        this.out = out;
        // New recipes add their commands here, one line each; a command that
        // holds something across commands keeps it in an Actor.
        register("mutex-acquire", 2, "<name> <path>", this::mutexAcquire);
        register("mutex-release", 1, "<name>", this::mutexRelease);
        register("mutex-loop", 5, "<path> <iterations> <holdMs> <logFile> <id>", this::mutexLoop);
        register("participants", 1, "<path>", this::participants);
        register("sem-acquire", 4, "<name> <path> <max> <qty>", this::semAcquire);
        register("sem-release", 1, "<name>", this::semRelease);
        register("sem-loop", 6, "<path> <max> <iterations> <holdMs> <logFile> <id>", this::semLoop);
        register("smutex-acquire", 2, "<name> <path>", this::smutexAcquire);
        register("smutex-release", 1, "<name>", this::smutexRelease);
        register("count-set", 2, "<path> <count>", this::countSet);
        register("count-get", 1, "<path>", this::countGet);
        register("rw-acquire", 3, "<name> <path> read|write", this::rwAcquire);
        register("rw-release", 2, "<name> read|write", this::rwRelease);
        register("rw-loop", 6, "<path> read|write <iterations> <holdMs> <logFile> <id>", this::rwLoop);
        register("latch-start", 3, "<name> <path> <id>", this::latchStart);
        register("latch-close", 1, "<name>", this::latchClose);
        register("latch-bench", 2, "<path> <rounds>", this::latchBench);
        register("mutex-bench", 4, "uncontended|contended|keys|queue <path> <x> <y>", this::mutexBench);
        register("selector-start", 3, "<name> <path> <id>", this::selectorStart);
        register("selector-release", 1, "<name>", this::selectorRelease);
        register("selector-close", 1, "<name>", this::selectorClose);
        // Atomic counters (recipes/counter), in their own block below.
        register("atomic-get", 2, "long|int <path>", this::atomicGet);
        register("atomic-add", 3, "long|int <path> <delta>", this::atomicAdd);
        register("atomic-loop", 6, "long|int <path> <iterations> <retries> <lockPath|-> <id>", this::atomicLoop);
        // shared value and count (recipes/shared); handlers at the end of the class
        register("shared-count-start", 3, "<name> <path> <seed>", this::sharedCountStart);
        register("shared-count-read", 1, "<name>", this::sharedCountRead);
        register("shared-count-tryset", 2, "<name> <count>", this::sharedCountTrySet);
        register("shared-count-set", 2, "<name> <count>", this::sharedCountSet);
        register("shared-count-increment", 2, "<name> <n>", this::sharedCountIncrement);
        register("shared-value-start", 3, "<name> <path> <seedHex>", this::sharedValueStart);
        register("shared-value-set", 2, "<name> <hex>", this::sharedValueSet);
        register("shared-close", 1, "<name>", this::sharedClose);
        registerBarriers();
        registerNodes();
        registerDiscovery();
        // make bench-watch's caches (WatchBench.java)
        WatchBench watch = new WatchBench(client, this::answer);
        register("watch-start", 2, "curatorcache|treecache|servicecache <path>", watch::start);
        register("watch-events", 3, "<n> <pathsFile> <seed>", watch::events);
        register("watch-close", 0, "", watch::close);
        register("quit", 0, "", args -> quit());
    }

    private void register(String name, int arity, String usage, Handler handler) {
        commands.put(name, new Command(arity, usage, handler));
    }

    public static void main(String[] argv) throws Exception {
        // The protocol owns the real stdout. Anything else that prints (a
        // library, a stray stack trace) lands on stderr, which the Go side
        // shows when a test fails.
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (argv.length != 2) {
            out.println("error usage: Agent <connectString> <sessionTimeoutMs>");
            System.exit(2);
        }
        int sessionTimeoutMs = Integer.parseInt(argv[1]);
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(argv[0])
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10));
        // Digest credentials come through the environment, not argv: a
        // password on a command line is visible to every local user.
        String digest = System.getenv("ZKRECIPES_AGENT_DIGEST");
        if (digest != null && !digest.isEmpty()) {
            builder.authorization("digest", digest.getBytes(StandardCharsets.UTF_8))
                    .aclProvider(new org.apache.curator.framework.api.ACLProvider() {
                        @Override
                        public java.util.List<org.apache.zookeeper.data.ACL> getDefaultAcl() {
                            return org.apache.zookeeper.ZooDefs.Ids.CREATOR_ALL_ACL;
                        }

                        @Override
                        public java.util.List<org.apache.zookeeper.data.ACL> getAclForPath(String path) {
                            return org.apache.zookeeper.ZooDefs.Ids.CREATOR_ALL_ACL;
                        }
                    });
        }
        CuratorFramework client = builder.build();
        client.start();
        if (!client.blockUntilConnected(60, TimeUnit.SECONDS)) {
            out.println("error not connected to " + argv[0] + " after 60s");
            client.close();
            System.exit(1);
        }
        new Agent(client, out).serve();
    }

    /** Reads commands until quit or EOF (the Go test is gone: exit, do not linger). */
    private void serve() throws IOException {
        answer("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (!line.isEmpty()) {
                dispatch(line);
            }
        }
        client.close();
        System.exit(0);
    }

    private void dispatch(String line) {
        String[] words = line.split("\\s+");
        Command c = commands.get(words[0]);
        if (c == null) {
            answer("error unknown command " + words[0]);
            return;
        }
        String[] args = Arrays.copyOfRange(words, 1, words.length);
        if (args.length != c.arity) {
            answer("error usage: " + words[0] + " " + c.usage);
            return;
        }
        try {
            c.handler.run(args);
        } catch (Throwable e) {
            answerError(words[0], e);
        }
    }

    /** Writes one protocol line. Threads answer concurrently; lines never mix. */
    private synchronized void answer(String line) {
        out.println(line);
        out.flush();
    }

    private void answerError(String what, Throwable e) {
        e.printStackTrace(); // to stderr, for the test log
        answer(("error " + what + ": " + e).replace('\n', ' '));
    }

    private Actor actor(String name) {
        return actors.computeIfAbsent(name, Actor::new);
    }

    // ---- InterProcessMutex ----

    /** mutex-acquire <name> <path>: acquire() on name's thread, then "acquired <name> <node>". */
    private void mutexAcquire(String[] a) {
        String name = a[0], path = a[1];
        Actor act = actor(name);
        act.submit("mutex-acquire " + name, () -> {
            InterProcessMutex m = act.recipe(InterProcessMutex.class, path, () -> new InterProcessMutex(client, path));
            m.acquire();
            answer("acquired " + name + " " + holderNode(m));
        });
    }

    /** mutex-release <name>: release() on the thread that acquired, then "released <name>". */
    private void mutexRelease(String[] a) {
        String name = a[0];
        Actor act = actor(name);
        act.submit("mutex-release " + name, () -> {
            act.existing(InterProcessMutex.class).release();
            answer("released " + name);
        });
    }

    /**
     * mutex-loop <path> <iterations> <holdMs> <logFile> <id>: a contender of
     * its own (own thread, own InterProcessMutex) that logs each critical
     * section to logFile, then answers "loop-done <id>".
     */
    private void mutexLoop(String[] a) {
        String path = a[0], logFile = a[3], id = a[4];
        int iterations = Integer.parseInt(a[1]);
        long holdMs = Long.parseLong(a[2]);
        loop("mutex-loop", id, logFile, log -> {
            InterProcessMutex m = new InterProcessMutex(client, path);
            for (int i = 0; i < iterations; i++) {
                m.acquire();
                try {
                    String node = ZKPaths.getNodeFromPath(holderNode(m));
                    logLine(log, "enter " + id + " " + node);
                    Thread.sleep(holdMs);
                    logLine(log, "exit " + id + " " + node);
                } finally {
                    m.release();
                }
            }
        });
    }

    /** participants <path>: the data of the lock nodes in Curator's queue order, comma-separated. */
    private void participants(String[] a) throws Exception {
        List<String> ids = new ArrayList<>();
        for (String node : new InterProcessMutex(client, a[0]).getParticipantNodes()) {
            try {
                ids.add(new String(client.getData().forPath(node), StandardCharsets.UTF_8));
            } catch (KeeperException.NoNodeException e) {
                // left while we looked
            }
        }
        answer(ids.isEmpty() ? "participants" : "participants " + String.join(",", ids));
    }


    // ---- InterProcessSemaphoreV2 ----

    /** A named semaphore and the leases taken through it, not yet returned. */
    private static final class Semaphore {
        final InterProcessSemaphoreV2 semaphore;
        final int max;
        final List<Lease> leases = new ArrayList<>();

        Semaphore(CuratorFramework client, String path, int max) {
            this.semaphore = new InterProcessSemaphoreV2(client, path, max);
            this.max = max;
        }
    }

    /**
     * Curator keeps a semaphore's leases under path/leases (its private
     * LEASE_PARENT); a Lease only knows its node's name.
     */
    private static String leasePath(String path, Lease lease) {
        return ZKPaths.makePath(ZKPaths.makePath(path, "leases"), lease.getNodeName());
    }

    /**
     * sem-acquire <name> <path> <max> <qty>: acquire(qty) on name's thread,
     * then "sem-acquired <name> <leasePath>...". The leases stay with name
     * until sem-release.
     */
    private void semAcquire(String[] a) {
        String name = a[0], path = a[1];
        int max = Integer.parseInt(a[2]), qty = Integer.parseInt(a[3]);
        Actor act = actor(name);
        act.submit("sem-acquire " + name, () -> {
            Semaphore sem = act.recipe(Semaphore.class, path, () -> new Semaphore(client, path, max));
            if (sem.max != max) {
                throw new IllegalStateException(name + " is a semaphore of " + sem.max + " leases, not " + max);
            }
            Collection<Lease> got = sem.semaphore.acquire(qty);
            StringBuilder line = new StringBuilder("sem-acquired " + name);
            for (Lease l : got) {
                sem.leases.add(l);
                line.append(' ').append(leasePath(path, l));
            }
            answer(line.toString());
        });
    }

    /** sem-release <name>: returns every lease name holds, then "sem-released <name>". */
    private void semRelease(String[] a) {
        String name = a[0];
        Actor act = actor(name);
        act.submit("sem-release " + name, () -> {
            Semaphore sem = act.existing(Semaphore.class);
            if (sem.leases.isEmpty()) {
                throw new IllegalStateException(name + " holds no lease");
            }
            sem.semaphore.returnAll(sem.leases);
            sem.leases.clear();
            answer("sem-released " + name);
        });
    }

    /**
     * sem-loop <path> <max> <iterations> <holdMs> <logFile> <id>: a contender
     * of its own (own thread, own InterProcessSemaphoreV2) that takes one
     * lease per iteration and logs "enter <id> <leaseName>" and
     * "exit <id> <leaseName>" around holding it, then answers "loop-done <id>".
     */
    private void semLoop(String[] a) {
        String path = a[0], logFile = a[4], id = a[5];
        int max = Integer.parseInt(a[1]), iterations = Integer.parseInt(a[2]);
        long holdMs = Long.parseLong(a[3]);
        loop("sem-loop", id, logFile, log -> {
            InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(client, path, max);
            for (int i = 0; i < iterations; i++) {
                Lease lease = sem.acquire();
                try {
                    String node = lease.getNodeName();
                    logLine(log, "enter " + id + " " + node);
                    Thread.sleep(holdMs);
                    logLine(log, "exit " + id + " " + node);
                } finally {
                    sem.returnLease(lease);
                }
            }
        });
    }

    // ---- InterProcessSemaphoreMutex ----

    /** smutex-acquire <name> <path>: acquire() on name's thread, then "smutex-acquired <name>". */
    private void smutexAcquire(String[] a) {
        String name = a[0], path = a[1];
        Actor act = actor(name);
        act.submit("smutex-acquire " + name, () -> {
            InterProcessSemaphoreMutex m = act.recipe(InterProcessSemaphoreMutex.class, path,
                    () -> new InterProcessSemaphoreMutex(client, path));
            m.acquire();
            answer("smutex-acquired " + name);
        });
    }

    /** smutex-release <name>: release(), then "smutex-released <name>". */
    private void smutexRelease(String[] a) {
        String name = a[0];
        Actor act = actor(name);
        act.submit("smutex-release " + name, () -> {
            act.existing(InterProcessSemaphoreMutex.class).release();
            answer("smutex-released " + name);
        });
    }

    // ---- SharedCount ----

    /** count-set <path> <count>: SharedCount.setCount (made with that seed if missing), then "count-set <path> <count>". */
    private void countSet(String[] a) throws Exception {
        int n = Integer.parseInt(a[1]);
        try (SharedCount count = new SharedCount(client, a[0], n)) {
            count.start();
            count.setCount(n);
        }
        answer("count-set " + a[0] + " " + n);
    }

    /** count-get <path>: the count as Curator's SharedCount reads it, "count <path> <count>". */
    private void countGet(String[] a) throws Exception {
        try (SharedCount count = new SharedCount(client, a[0], 0)) {
            count.start();
            answer("count " + a[0] + " " + count.getCount());
        }
    }

    // ---- InterProcessReadWriteLock ----

    /**
     * The write side of a read-write lock, telling which node the calling
     * thread holds it through. getLockPath is Curator's own accessor for
     * that, protected in 5.4 (public in later versions): subclassing the
     * public WriteLock is how an application reaches it, without touching
     * Curator's internals.
     */
    private static final class WriteSide extends InterProcessReadWriteLock.WriteLock {
        WriteSide(CuratorFramework client, String path) {
            super(client, path, null);
        }

        String node() {
            return getLockPath();
        }
    }

    /** The read side, likewise. */
    private static final class ReadSide extends InterProcessReadWriteLock.ReadLock {
        ReadSide(CuratorFramework client, String path, WriteSide writeLock) {
            super(client, path, null, writeLock);
        }

        String node() {
            return getLockPath();
        }
    }

    /**
     * A read-write lock built from the two sides above, exactly as
     * InterProcessReadWriteLock(client, path) builds its own (its protected
     * constructor takes the two sides).
     */
    private static final class ReadWrite extends InterProcessReadWriteLock {
        final WriteSide write;
        final ReadSide read;

        private ReadWrite(WriteSide write, ReadSide read) {
            super(write, read);
            this.write = write;
            this.read = read;
        }

        static ReadWrite create(CuratorFramework client, String path) {
            WriteSide w = new WriteSide(client, path);
            return new ReadWrite(w, new ReadSide(client, path, w));
        }

        InterProcessMutex side(String mode) {
            switch (mode) {
                case "read":
                    return readLock();
                case "write":
                    return writeLock();
                default:
                    throw new IllegalArgumentException("mode must be read or write, not " + mode);
            }
        }

        /** The node the calling thread holds mode through (null if it does not). */
        String node(String mode) {
            return mode.equals("read") ? read.node() : write.node();
        }
    }

    /**
     * rw-acquire <name> <path> read|write: acquire() of that side on name's
     * thread, then "rw-acquired <name> <mode> <nodePath>". Curator's locks
     * are reentrant per thread, as with mutex-acquire.
     */
    private void rwAcquire(String[] a) {
        String name = a[0], path = a[1], mode = a[2];
        Actor act = actor(name);
        act.submit("rw-acquire " + name, () -> {
            ReadWrite rw = act.recipe(ReadWrite.class, path, () -> ReadWrite.create(client, path));
            rw.side(mode).acquire();
            answer("rw-acquired " + name + " " + mode + " " + rw.node(mode));
        });
    }

    /** rw-release <name> read|write: release() of that side on name's thread, then "rw-released <name> <mode>". */
    private void rwRelease(String[] a) {
        String name = a[0], mode = a[1];
        Actor act = actor(name);
        act.submit("rw-release " + name, () -> {
            act.existing(ReadWrite.class).side(mode).release();
            answer("rw-released " + name + " " + mode);
        });
    }

    /**
     * rw-loop <path> read|write <iterations> <holdMs> <logFile> <id>: a
     * contender of its own that takes one side per iteration and logs
     * "enter <id> <mode> <nodeName>" and "exit <id> <mode> <nodeName>" around
     * holding it, then answers "loop-done <id>".
     */
    private void rwLoop(String[] a) {
        String path = a[0], mode = a[1], logFile = a[4], id = a[5];
        int iterations = Integer.parseInt(a[2]);
        long holdMs = Long.parseLong(a[3]);
        loop("rw-loop", id, logFile, log -> {
            ReadWrite rw = ReadWrite.create(client, path);
            InterProcessMutex side = rw.side(mode);
            for (int i = 0; i < iterations; i++) {
                side.acquire();
                try {
                    String node = ZKPaths.getNodeFromPath(rw.node(mode));
                    logLine(log, "enter " + id + " " + mode + " " + node);
                    Thread.sleep(holdMs);
                    logLine(log, "exit " + id + " " + mode + " " + node);
                } finally {
                    side.release();
                }
            }
        });
    }

    // ---- loops ----

    /** The body of a loop command, given the open log. */
    interface LoopBody {
        void run(FileOutputStream log) throws Exception;
    }

    /**
     * Runs body on a thread of its own with logFile open for appending, then
     * answers "loop-done <id>" (or "error <what> <id>: ...").
     */
    private void loop(String what, String id, String logFile, LoopBody body) {
        Thread t = new Thread(() -> {
            try (FileOutputStream log = new FileOutputStream(logFile, true)) {
                body.run(log);
                answer("loop-done " + id);
            } catch (Throwable e) {
                answerError(what + " " + id, e);
            }
        }, "loop-" + id);
        t.setDaemon(true);
        t.start();
    }

    /**
     * One line to a loop's log: append mode (O_APPEND) and one write() per
     * line, so lines from several processes appending to one file never
     * interleave, and the file's order is the order the writes happened.
     */
    // --- leader election: LeaderLatch and LeaderSelector -----------------

    private final Map<String, LeaderLatch> latches = new ConcurrentHashMap<>();
    private final Map<String, LeaderSelector> selectors = new ConcurrentHashMap<>();
    private final Map<String, java.util.concurrent.Semaphore> selectorRelease = new ConcurrentHashMap<>();

    /**
     * latch-start <name> <path> <id>: a LeaderLatch with participant id;
     * answers "latch-started <name>", then "latch-leader <name>" and
     * "latch-notleader <name>" as its listener is told.
     */
    private void latchStart(String[] a) throws Exception {
        String name = a[0], path = a[1], id = a[2];
        LeaderLatch latch = new LeaderLatch(client, path, id);
        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                answer("latch-leader " + name);
            }

            @Override
            public void notLeader() {
                answer("latch-notleader " + name);
            }
        });
        latches.put(name, latch);
        latch.start();
        answer("latch-started " + name);
    }

    /** latch-close <name>: close (silently, Curator's default), then "latch-closed <name>". */
    private void latchClose(String[] a) throws Exception {
        LeaderLatch latch = latches.remove(a[0]);
        if (latch == null) {
            throw new IllegalStateException("no latch named " + a[0]);
        }
        latch.close();
        answer("latch-closed " + a[0]);
    }

    /**
     * latch-bench <path> <rounds>: graceful handoffs between two LeaderLatch
     * on two sessions, as the Go benchmark does: a second latch queues, the
     * leader closes, and the time until the second leads is one sample.
     * After 50 warm-up rounds, answers "latch-bench p50_us=<n> p99_us=<n>".
     */
    private void latchBench(String[] a) {
        String path = a[0];
        int rounds = Integer.parseInt(a[1]);
        Thread t = new Thread(() -> {
            try (CuratorFramework other = CuratorFrameworkFactory.newClient(
                    client.getZookeeperClient().getCurrentConnectionString(), 10_000, 15_000,
                    new ExponentialBackoffRetry(100, 10))) {
                other.start();
                if (!other.blockUntilConnected(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("second client not connected");
                }
                CuratorFramework[] clients = {other, client};
                LeaderLatch current = new LeaderLatch(client, path);
                current.start();
                current.await();
                long[] samples = new long[rounds];
                for (int i = -50; i < rounds; i++) {
                    LeaderLatch next = new LeaderLatch(clients[(i + 50) % 2], path);
                    next.start();
                    while (current.getParticipants().size() < 2) {
                        Thread.onSpinWait(); // until the next one has queued
                    }
                    long t0 = System.nanoTime();
                    current.close();
                    next.await();
                    long d = System.nanoTime() - t0;
                    if (i >= 0) {
                        samples[i] = d;
                    }
                    current = next;
                }
                current.close();
                Arrays.sort(samples);
                answer("latch-bench p50_us=" + samples[rounds / 2] / 1000 + " p99_us=" + samples[rounds * 99 / 100] / 1000);
            } catch (Throwable e) {
                answerError("latch-bench", e);
            }
        }, "latch-bench");
        t.setDaemon(true);
        t.start();
    }

    /**
     * mutex-bench MODE PATH X Y: the workloads of zkr-bench, for
     * InterProcessMutex, answered as "mutex-bench " + zkr-bench's own line
     * with peer=curator: uncontended PATH N - (50 warm-up rounds, then N
     * timed), contended PATH CLIENTS MILLIS (a session each), keys PATH
     * KEYS WORKERS (5 s on this session, a new mutex per acquisition on
     * one of KEYS paths), queue PATH WAITERS - (a holder, then WAITERS
     * threads over up to 10 sessions queued behind it; per handoff).
     */
    private void mutexBench(String[] a) {
        String mode = a[0], path = a[1];
        int x = Integer.parseInt(a[2]);
        Thread t = new Thread(() -> {
            List<CuratorFramework> extra = new ArrayList<>();
            try {
                String line;
                switch (mode) {
                    case "uncontended": {
                        InterProcessMutex m = new InterProcessMutex(client, path);
                        long[] lat = new long[x];
                        for (int i = -50; i < x; i++) {
                            long t0 = System.nanoTime();
                            m.acquire();
                            m.release();
                            if (i >= 0) {
                                lat[i] = System.nanoTime() - t0;
                            }
                        }
                        long total = Arrays.stream(lat).sum();
                        Arrays.sort(lat);
                        line = "mode=uncontended n=" + x + " p50_us=" + lat[x / 2] / 1000 + " p99_us=" + lat[x * 99 / 100] / 1000
                                + " ops_per_s=" + (long) (x / (total / 1e9));
                        break;
                    }
                    case "contended": {
                        long millis = Long.parseLong(a[3]);
                        long[] counts = new long[x];
                        java.util.concurrent.atomic.AtomicInteger inside = new java.util.concurrent.atomic.AtomicInteger();
                        java.util.concurrent.atomic.AtomicLong overlaps = new java.util.concurrent.atomic.AtomicLong();
                        List<Thread> ts = new ArrayList<>();
                        long start = System.nanoTime(), end = start + millis * 1_000_000;
                        for (int i = 0; i < x; i++) {
                            CuratorFramework c = session(extra);
                            InterProcessMutex m = new InterProcessMutex(c, path);
                            int id = i;
                            ts.add(new Thread(() -> {
                                try {
                                    while (System.nanoTime() < end) {
                                        m.acquire();
                                        if (inside.incrementAndGet() > 1) {
                                            overlaps.incrementAndGet();
                                        }
                                        counts[id]++;
                                        inside.decrementAndGet();
                                        m.release();
                                    }
                                } catch (Exception e) {
                                    throw new RuntimeException(e);
                                }
                            }));
                        }
                        ts.forEach(Thread::start);
                        for (Thread th : ts) {
                            th.join();
                        }
                        long total = Arrays.stream(counts).sum();
                        double secs = (System.nanoTime() - start) / 1e9;
                        line = "mode=contended clients=" + x + " acquisitions=" + total + " per_s=" + (long) (total / secs)
                                + " min_client=" + Arrays.stream(counts).min().getAsLong() + " max_client="
                                + Arrays.stream(counts).max().getAsLong() + " overlaps=" + overlaps.get();
                        break;
                    }
                    case "keys": {
                        int workers = Integer.parseInt(a[3]);
                        long end = System.nanoTime() + 5_000_000_000L;
                        List<List<Long>> lats = new ArrayList<>();
                        List<Thread> ts = new ArrayList<>();
                        for (int w = 0; w < workers; w++) {
                            List<Long> mine = new ArrayList<>();
                            lats.add(mine);
                            ts.add(new Thread(() -> {
                                java.util.Random r = new java.util.Random();
                                try {
                                    while (System.nanoTime() < end) {
                                        long t0 = System.nanoTime();
                                        InterProcessMutex m = new InterProcessMutex(client, path + "/k" + r.nextInt(x));
                                        m.acquire();
                                        m.release();
                                        mine.add(System.nanoTime() - t0);
                                    }
                                } catch (Exception e) {
                                    throw new RuntimeException(e);
                                }
                            }));
                        }
                        ts.forEach(Thread::start);
                        for (Thread th : ts) {
                            th.join();
                        }
                        long[] all = lats.stream().flatMap(List::stream).mapToLong(Long::longValue).sorted().toArray();
                        line = "mode=keys keys=" + x + " workers=" + workers + " per_s=" + all.length / 5 + " p50_us="
                                + all[all.length / 2] / 1000 + " p99_us=" + all[all.length * 99 / 100] / 1000;
                        break;
                    }
                    case "queue": {
                        int sessions = Math.min(x, 10);
                        InterProcessMutex holder = new InterProcessMutex(client, path);
                        holder.acquire();
                        List<InterProcessMutex> ms = new ArrayList<>();
                        for (int i = 0; i < sessions; i++) {
                            ms.add(new InterProcessMutex(session(extra), path));
                        }
                        java.util.concurrent.CountDownLatch drained = new java.util.concurrent.CountDownLatch(x);
                        for (int i = 0; i < x; i++) {
                            InterProcessMutex m = ms.get(i % sessions);
                            Thread th = new Thread(() -> {
                                try {
                                    m.acquire();
                                    m.release();
                                    drained.countDown();
                                } catch (Exception e) {
                                    answerError("mutex-bench", e);
                                }
                            });
                            th.setDaemon(true);
                            th.start();
                        }
                        while (client.getChildren().forPath(path).size() < x + 1) {
                            Thread.sleep(20); // until every waiter has queued
                        }
                        Thread.sleep(1000); // and set its watch: not part of the handoffs
                        long t0 = System.nanoTime();
                        holder.release();
                        drained.await();
                        line = "mode=queue waiters=" + x + " per_handoff_us=" + (System.nanoTime() - t0) / 1000 / x;
                        break;
                    }
                    default:
                        throw new IllegalArgumentException("unknown mode " + mode);
                }
                answer("mutex-bench peer=curator " + line);
            } catch (Throwable e) {
                answerError("mutex-bench", e);
            } finally {
                extra.forEach(CuratorFramework::close);
            }
        }, "mutex-bench");
        t.setDaemon(true);
        t.start();
    }

    /** session opens one more session to the agent's servers, closed by the caller. */
    private CuratorFramework session(List<CuratorFramework> opened) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.newClient(
                client.getZookeeperClient().getCurrentConnectionString(), 10_000, 15_000,
                new ExponentialBackoffRetry(100, 10));
        opened.add(c);
        c.start();
        if (!c.blockUntilConnected(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("a bench session did not connect");
        }
        return c;
    }

    /**
     * selector-start <name> <path> <id>: a LeaderSelector that, when it
     * leads, answers "selector-leading <name>" and keeps leadership until
     * selector-release, then answers "selector-released <name>".
     */
    private void selectorStart(String[] a) {
        String name = a[0], path = a[1], id = a[2];
        java.util.concurrent.Semaphore release = new java.util.concurrent.Semaphore(0);
        LeaderSelector sel = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework c) throws Exception {
                answer("selector-leading " + name);
                release.acquire();
                answer("selector-released " + name);
            }
        });
        sel.setId(id);
        selectors.put(name, sel);
        selectorRelease.put(name, release);
        sel.start();
        answer("selector-started " + name);
    }

    /** selector-release <name>: ends the current term (the answer comes from takeLeadership). */
    private void selectorRelease(String[] a) {
        java.util.concurrent.Semaphore release = selectorRelease.get(a[0]);
        if (release == null) {
            throw new IllegalStateException("no selector named " + a[0]);
        }
        release.release();
    }

    /** selector-close <name>: close, then "selector-closed <name>". */
    private void selectorClose(String[] a) {
        LeaderSelector sel = selectors.remove(a[0]);
        if (sel == null) {
            throw new IllegalStateException("no selector named " + a[0]);
        }
        sel.close();
        answer("selector-closed " + a[0]);
    }

    // ---- Plain nodes, written as Curator writes them (for the cache) ----

    private void registerNodes() {
        register("node-create", 3, "<path> persistent|ephemeral|protected-ephemeral-sequential <hex>", this::nodeCreate);
        register("node-set", 2, "<path> <hex>", this::nodeSet);
        register("node-delete", 1, "<path>", this::nodeDelete);
    }

    /**
     * node-create <path> <mode> <hex>: create with parents as containers
     * (protected-ephemeral-sequential: withProtection(), as GroupMember and
     * PersistentNode do), then "node-created <actualPath>".
     */
    private void nodeCreate(String[] a) throws Exception {
        byte[] data = java.util.HexFormat.of().parseHex(a[2]);
        String made;
        switch (a[1]) {
            case "persistent":
                made = client.create().creatingParentContainersIfNeeded().forPath(a[0], data);
                break;
            case "ephemeral":
                made = client.create().creatingParentContainersIfNeeded()
                        .withMode(org.apache.zookeeper.CreateMode.EPHEMERAL).forPath(a[0], data);
                break;
            case "protected-ephemeral-sequential":
                made = client.create().creatingParentContainersIfNeeded().withProtection()
                        .withMode(org.apache.zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL).forPath(a[0], data);
                break;
            default:
                throw new IllegalArgumentException("no node mode " + a[1]);
        }
        answer("node-created " + made);
    }

    /** node-set <path> <hex>: setData, then "node-set <path> <version>". */
    private void nodeSet(String[] a) throws Exception {
        org.apache.zookeeper.data.Stat st = client.setData().forPath(a[0], java.util.HexFormat.of().parseHex(a[1]));
        answer("node-set " + a[0] + " " + st.getVersion());
    }

    /** node-delete <path>: delete with its children, then "node-deleted <path>". */
    private void nodeDelete(String[] a) throws Exception {
        client.delete().deletingChildrenIfNeeded().forPath(a[0]);
        answer("node-deleted " + a[0]);
    }

    // ---- DistributedBarrier and DistributedDoubleBarrier ----

    private void registerBarriers() {
        register("barrier-set", 1, "<path>", this::barrierSet);
        register("barrier-remove", 1, "<path>", this::barrierRemove);
        register("barrier-wait", 3, "<name> <path> <maxWaitMs>", this::barrierWait);
        register("dbarrier-enter", 4, "<name> <path> <memberQty> <maxWaitMs>", this::dbarrierEnter);
        register("dbarrier-leave", 2, "<name> <maxWaitMs>", this::dbarrierLeave);
    }

    /** barrier-set <path>: setBarrier(), then "barrier-set <path>". */
    private void barrierSet(String[] a) throws Exception {
        new DistributedBarrier(client, a[0]).setBarrier();
        answer("barrier-set " + a[0]);
    }

    /** barrier-remove <path>: removeBarrier(), then "barrier-removed <path>". */
    private void barrierRemove(String[] a) throws Exception {
        new DistributedBarrier(client, a[0]).removeBarrier();
        answer("barrier-removed " + a[0]);
    }

    /**
     * barrier-wait <name> <path> <maxWaitMs>: waitOnBarrier(maxWaitMs) on
     * name's thread, then "barrier-waited <name> true|false" (false: timed
     * out with the barrier still set).
     */
    private void barrierWait(String[] a) {
        String name = a[0], path = a[1];
        long maxWaitMs = Long.parseLong(a[2]);
        Actor act = actor(name);
        act.submit("barrier-wait " + name, () -> {
            DistributedBarrier b = act.recipe(DistributedBarrier.class, path, () -> new DistributedBarrier(client, path));
            answer("barrier-waited " + name + " " + b.waitOnBarrier(maxWaitMs, TimeUnit.MILLISECONDS));
        });
    }

    /**
     * dbarrier-enter <name> <path> <memberQty> <maxWaitMs>: enter(maxWaitMs)
     * of name's DistributedDoubleBarrier (one member: one node), then
     * "dbarrier-entered <name> true|false".
     */
    private void dbarrierEnter(String[] a) {
        String name = a[0], path = a[1];
        int qty = Integer.parseInt(a[2]);
        long maxWaitMs = Long.parseLong(a[3]);
        Actor act = actor(name);
        act.submit("dbarrier-enter " + name, () -> {
            DistributedDoubleBarrier d = act.recipe(DistributedDoubleBarrier.class, path,
                    () -> new DistributedDoubleBarrier(client, path, qty));
            answer("dbarrier-entered " + name + " " + d.enter(maxWaitMs, TimeUnit.MILLISECONDS));
        });
    }

    /** dbarrier-leave <name> <maxWaitMs>: leave(maxWaitMs), then "dbarrier-left <name> true|false". */
    private void dbarrierLeave(String[] a) {
        String name = a[0];
        long maxWaitMs = Long.parseLong(a[1]);
        Actor act = actor(name);
        act.submit("dbarrier-leave " + name, () -> {
            boolean left = act.existing(DistributedDoubleBarrier.class).leave(maxWaitMs, TimeUnit.MILLISECONDS);
            answer("dbarrier-left " + name + " " + left);
        });
    }

    // ---- curator-x-discovery ----

    /** One started ServiceDiscovery per base path, with Map payloads and Curator's default serializer. */
    private final Map<String, ServiceDiscovery<Map>> discoveries = new ConcurrentHashMap<>();
    private static final ObjectMapper JSON = new ObjectMapper();

    private void registerDiscovery() {
        register("disc-register", 6, "<basePath> <name> <id> <address> <port> <payloadJsonHex>", this::discRegister);
        register("disc-unregister", 3, "<basePath> <name> <id>", this::discUnregister);
        register("disc-query", 2, "<basePath> <name>", this::discQuery);
        register("disc-provide", 2, "<basePath> <name>", this::discProvide);
        register("disc-typed-register", 5, "<basePath> <name> <id> <payloadClass> <payloadJsonHex|->", this::discTypedRegister);
        register("disc-typed-query", 3, "<basePath> <name> <payloadClass>", this::discTypedQuery);
        register("group-join", 3, "<path> <id> <payloadHex>", this::groupJoin);
        register("group-members", 1, "<id>", this::groupMembers);
        register("group-leave", 1, "<id>", this::groupLeave);
    }

    private final Map<String, GroupMember> groupMembers = new ConcurrentHashMap<>();

    /** group-join <path> <id> <payloadHex>: a started GroupMember, then "group-joined <id>". */
    private void groupJoin(String[] a) {
        GroupMember m = new GroupMember(client, a[0], a[1], fromHex(a[2]));
        m.start();
        groupMembers.put(a[1], m);
        answer("group-joined " + a[1]);
    }

    /** group-members <id>: getCurrentMembers of member id, then "group-members <id> <id>=<hex>,..." sorted. */
    private void groupMembers(String[] a) {
        GroupMember m = groupMembers.get(a[0]);
        if (m == null) {
            throw new IllegalStateException("no member " + a[0]);
        }
        List<String> parts = new ArrayList<>();
        for (Map.Entry<String, byte[]> e : new java.util.TreeMap<>(m.getCurrentMembers()).entrySet()) {
            parts.add(e.getKey() + "=" + toHex(e.getValue()));
        }
        answer("group-members " + a[0] + " " + String.join(",", parts));
    }

    /** group-leave <id>: close the GroupMember, then "group-left <id>". */
    private void groupLeave(String[] a) {
        GroupMember m = groupMembers.remove(a[0]);
        if (m == null) {
            throw new IllegalStateException("no member " + a[0]);
        }
        m.close();
        answer("group-left " + a[0]);
    }

    private ServiceDiscovery<Map> discovery(String basePath) throws Exception {
        synchronized (discoveries) {
            ServiceDiscovery<Map> d = discoveries.get(basePath);
            if (d == null) {
                d = ServiceDiscoveryBuilder.builder(Map.class).client(client).basePath(basePath).build();
                d.start();
                discoveries.put(basePath, d);
            }
            return d;
        }
    }

    /**
     * disc-register <basePath> <name> <id> <address> <port> <payloadJsonHex>:
     * registerService of a DYNAMIC instance whose payload is the JSON object
     * given (a HashMap), then "disc-registered <id>".
     */
    @SuppressWarnings("unchecked")
    private void discRegister(String[] a) throws Exception {
        Map<String, Object> payload = JSON.readValue(fromHex(a[5]), HashMap.class);
        ServiceInstance<Map> inst = ServiceInstance.<Map>builder()
                .name(a[1]).id(a[2]).address(a[3]).port(Integer.parseInt(a[4])).payload(payload).build();
        discovery(a[0]).registerService(inst);
        answer("disc-registered " + a[2]);
    }

    /** disc-unregister <basePath> <name> <id>: unregisterService, then "disc-unregistered <id>". */
    private void discUnregister(String[] a) throws Exception {
        ServiceDiscovery<Map> d = discovery(a[0]);
        ServiceInstance<Map> inst = d.queryForInstance(a[1], a[2]);
        if (inst == null) {
            throw new IllegalStateException("no instance " + a[1] + "/" + a[2]);
        }
        d.unregisterService(inst);
        answer("disc-unregistered " + a[2]);
    }

    /**
     * disc-query <basePath> <name>: queryForInstances, then "disc-instances
     * <name> <hex>" where hex is a JSON array of {id, address, port, sslPort,
     * enabled, payload, payloadClass}, sorted by id.
     */
    private void discQuery(String[] a) throws Exception {
        List<Map<String, Object>> out = new ArrayList<>();
        for (ServiceInstance<Map> inst : discovery(a[0]).queryForInstances(a[1])) {
            Map<String, Object> m = new java.util.TreeMap<>();
            m.put("id", inst.getId());
            m.put("address", inst.getAddress());
            m.put("port", inst.getPort());
            m.put("sslPort", inst.getSslPort());
            m.put("enabled", inst.isEnabled());
            m.put("payload", inst.getPayload());
            m.put("payloadClass", inst.getPayload() == null ? null : inst.getPayload().getClass().getName());
            out.add(m);
        }
        out.sort((x, y) -> ((String) x.get("id")).compareTo((String) y.get("id")));
        answer("disc-instances " + a[1] + " " + toHex(JSON.writeValueAsBytes(out)));
    }

    /** disc-provide <basePath> <name>: a started ServiceProvider's getInstance, then "disc-provided <name> <id>|-". */
    private void discProvide(String[] a) throws Exception {
        try (ServiceProvider<Map> p = discovery(a[0]).serviceProviderBuilder().serviceName(a[1]).build()) {
            p.start();
            ServiceInstance<Map> inst = p.getInstance();
            answer("disc-provided " + a[1] + " " + (inst == null ? "-" : inst.getId()));
        }
    }

    /** One started ServiceDiscovery per base path and payload class, for the disc-typed-* commands. */
    private final Map<String, ServiceDiscovery<Object>> typedDiscoveries = new ConcurrentHashMap<>();

    @SuppressWarnings({"unchecked", "rawtypes"})
    private ServiceDiscovery<Object> typedDiscovery(String basePath, String payloadClass) throws Exception {
        synchronized (typedDiscoveries) {
            String key = basePath + " " + payloadClass;
            ServiceDiscovery<Object> d = typedDiscoveries.get(key);
            if (d == null) {
                Class cls = Class.forName(payloadClass);
                d = ServiceDiscoveryBuilder.builder(cls).client(client).basePath(basePath).build();
                d.start();
                typedDiscoveries.put(key, d);
            }
            return d;
        }
    }

    /**
     * disc-typed-register <basePath> <name> <id> <payloadClass> <payloadJsonHex|->:
     * registerService, through a ServiceDiscovery of that payload class, of a
     * DYNAMIC instance whose payload is the JSON given read as that class
     * ("-": null), then "disc-typed-registered <id>".
     */
    private void discTypedRegister(String[] a) throws Exception {
        Class<?> cls = Class.forName(a[3]);
        Object payload = a[4].equals("-") ? null : JSON.readValue(fromHex(a[4]), cls);
        ServiceInstance<Object> inst = ServiceInstance.<Object>builder().name(a[1]).id(a[2]).payload(payload).build();
        typedDiscovery(a[0], a[3]).registerService(inst);
        answer("disc-typed-registered " + a[2]);
    }

    /**
     * disc-typed-query <basePath> <name> <payloadClass>: queryForInstances
     * through a ServiceDiscovery of that payload class, then
     * "disc-typed-instances <name> <hex>" (a JSON array of {id, payload,
     * payloadClass}, sorted by id), or "disc-typed-failed <name> <exception
     * class>" when Curator throws (an instance whose payload the class cannot
     * read fails the whole query).
     */
    private void discTypedQuery(String[] a) throws Exception {
        java.util.Collection<ServiceInstance<Object>> insts;
        try {
            insts = typedDiscovery(a[0], a[2]).queryForInstances(a[1]);
        } catch (Exception e) {
            answer("disc-typed-failed " + a[1] + " " + e.getClass().getName());
            return;
        }
        List<Map<String, Object>> out = new ArrayList<>();
        for (ServiceInstance<Object> inst : insts) {
            Map<String, Object> m = new java.util.TreeMap<>();
            m.put("id", inst.getId());
            m.put("payload", inst.getPayload());
            m.put("payloadClass", inst.getPayload() == null ? null : inst.getPayload().getClass().getName());
            out.add(m);
        }
        out.sort((x, y) -> ((String) x.get("id")).compareTo((String) y.get("id")));
        answer("disc-typed-instances " + a[1] + " " + toHex(JSON.writeValueAsBytes(out)));
    }

    private static void logLine(FileOutputStream log, String line) throws IOException {
        log.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The lock node of the mutex's current holder. Called while holding, so
     * it is ours: Curator grants the mutex to the first node in queue order.
     */
    private static String holderNode(InterProcessMutex m) throws Exception {
        Collection<String> nodes = m.getParticipantNodes();
        if (nodes.isEmpty()) {
            throw new IllegalStateException("holding, but no participant nodes");
        }
        return nodes.iterator().next();
    }

    // ---- atomic counters: DistributedAtomicLong / DistributedAtomicInteger ----

    /** A long or an integer counter on path, optionally promoted to a lock. */
    private DistributedAtomicNumber<? extends Number> atomicCounter(String kind, String path, int retries, String lockPath) {
        org.apache.curator.RetryPolicy policy = new RetryNTimes(retries, 1);
        PromotedToLock promoted = lockPath.equals("-") ? null
                : PromotedToLock.builder().lockPath(lockPath).timeout(30, TimeUnit.SECONDS).retryPolicy(new RetryNTimes(100, 1)).build();
        switch (kind) {
            case "long":
                return new DistributedAtomicLong(client, path, policy, promoted);
            case "int":
                return new DistributedAtomicInteger(client, path, policy, promoted);
            default:
                throw new IllegalArgumentException("long or int, not " + kind);
        }
    }

    /** atomic-get long|int <path>: get(), then "atomic <path> <value>". */
    private void atomicGet(String[] a) throws Exception {
        AtomicValue<? extends Number> v = atomicCounter(a[0], a[1], 0, "-").get();
        answer("atomic " + a[1] + " " + v.postValue());
    }

    /** atomic-add long|int <path> <delta>: add(), then "atomic-added <path> <succeeded> <pre> <post>". */
    private void atomicAdd(String[] a) throws Exception {
        AtomicValue<? extends Number> v = a[0].equals("long")
                ? ((DistributedAtomicLong) atomicCounter(a[0], a[1], 10, "-")).add(Long.parseLong(a[2]))
                : ((DistributedAtomicInteger) atomicCounter(a[0], a[1], 10, "-")).add(Integer.parseInt(a[2]));
        answer("atomic-added " + a[1] + " " + v.succeeded() + " " + v.preValue() + " " + v.postValue());
    }

    /**
     * atomic-loop long|int <path> <iterations> <retries> <lockPath|-> <id>:
     * on a thread of its own, increment() iterations times (RetryNTimes(retries)
     * optimistic tries, then the lock if one is given), then
     * "atomic-loop-done <id> <succeeded> <failed> <promoted>": how many
     * increments said they succeeded, how many did not, and how many took the
     * lock.
     */
    private void atomicLoop(String[] a) {
        String kind = a[0], path = a[1], lockPath = a[4], id = a[5];
        int iterations = Integer.parseInt(a[2]), retries = Integer.parseInt(a[3]);
        Thread t = new Thread(() -> {
            try {
                DistributedAtomicNumber<? extends Number> n = atomicCounter(kind, path, retries, lockPath);
                int ok = 0, failed = 0, promoted = 0;
                for (int i = 0; i < iterations; i++) {
                    AtomicValue<? extends Number> v = n.increment();
                    if (v.succeeded()) {
                        ok++;
                    } else {
                        failed++;
                    }
                    if (v.getStats().getPromotedLockTries() > 0) {
                        promoted++;
                    }
                }
                answer("atomic-loop-done " + id + " " + ok + " " + failed + " " + promoted);
            } catch (Throwable e) {
                answerError("atomic-loop " + id, e);
            }
        }, "atomic-loop-" + id);
        t.setDaemon(true);
        t.start();
    }

    private void quit() {
        client.close();
        answer("bye");
        System.exit(0);
    }

    // ---- SharedCount / SharedValue (recipes/shared) ----
    //
    // Each name is one started SharedCount or SharedValue, kept on its actor
    // until shared-close. Its listener answers every change Curator
    // delivers, on Curator's event thread.

    /** The count's recipe object and the versioned value shared-count-read took. */
    private static final class SharedCountHolder {
        SharedCount count;
        VersionedValue<Integer> read;
    }

    /**
     * shared-count-start <name> <path> <seed>: a started SharedCount whose
     * listener answers "shared-count-changed <name> <count>"; then
     * "shared-count-started <name> <count> <version>".
     */
    private void sharedCountStart(String[] a) {
        String name = a[0], path = a[1];
        int seed = Integer.parseInt(a[2]);
        Actor act = actor(name);
        act.submit("shared-count-start " + name, () -> {
            SharedCountHolder h = act.recipe(SharedCountHolder.class, path, SharedCountHolder::new);
            h.count = new SharedCount(client, path, seed);
            h.count.addListener(new SharedCountListener() {
                @Override
                public void countHasChanged(SharedCountReader reader, int newCount) {
                    answer("shared-count-changed " + name + " " + newCount);
                }

                @Override
                public void stateChanged(CuratorFramework c, ConnectionState state) {}
            });
            h.count.start();
            VersionedValue<Integer> v = h.count.getVersionedValue();
            answer("shared-count-started " + name + " " + v.getValue() + " " + v.getVersion());
        });
    }

    /**
     * shared-count-read <name>: takes getVersionedValue() for the next
     * shared-count-tryset, "shared-count-read <name> <count> <version>".
     */
    private void sharedCountRead(String[] a) {
        String name = a[0];
        Actor act = actor(name);
        act.submit("shared-count-read " + name, () -> {
            SharedCountHolder h = act.existing(SharedCountHolder.class);
            h.read = h.count.getVersionedValue();
            answer("shared-count-read " + name + " " + h.read.getValue() + " " + h.read.getVersion());
        });
    }

    /**
     * shared-count-tryset <name> <count>: trySetCount with the value the
     * last shared-count-read took, then "shared-count-tryset <name>
     * true|false <count> <version>" with the count held after it.
     */
    private void sharedCountTrySet(String[] a) {
        String name = a[0];
        int n = Integer.parseInt(a[1]);
        Actor act = actor(name);
        act.submit("shared-count-tryset " + name, () -> {
            SharedCountHolder h = act.existing(SharedCountHolder.class);
            boolean ok = h.count.trySetCount(h.read, n);
            VersionedValue<Integer> v = h.count.getVersionedValue();
            answer("shared-count-tryset " + name + " " + ok + " " + v.getValue() + " " + v.getVersion());
        });
    }

    /** shared-count-set <name> <count>: setCount, then "shared-count-set <name> <count>". */
    private void sharedCountSet(String[] a) {
        String name = a[0];
        int n = Integer.parseInt(a[1]);
        Actor act = actor(name);
        act.submit("shared-count-set " + name, () -> {
            act.existing(SharedCountHolder.class).count.setCount(n);
            answer("shared-count-set " + name + " " + n);
        });
    }

    /**
     * shared-count-increment <name> <n>: n increments by trySetCount, each
     * retried from the fresh value until it succeeds, then
     * "shared-count-incremented <name> <n> <failedTries>".
     */
    private void sharedCountIncrement(String[] a) {
        String name = a[0];
        int n = Integer.parseInt(a[1]);
        Actor act = actor(name);
        act.submit("shared-count-increment " + name, () -> {
            SharedCount count = act.existing(SharedCountHolder.class).count;
            int failed = 0;
            for (int done = 0; done < n; ) {
                VersionedValue<Integer> cur = count.getVersionedValue();
                if (count.trySetCount(cur, cur.getValue() + 1)) {
                    done++;
                } else {
                    failed++;
                }
            }
            answer("shared-count-incremented " + name + " " + n + " " + failed);
        });
    }

    /**
     * shared-value-start <name> <path> <seedHex>: a started SharedValue
     * whose listener answers "shared-value-changed <name> <hex>"; then
     * "shared-value-started <name> <hex> <version>". "-" is the empty value.
     */
    private void sharedValueStart(String[] a) {
        String name = a[0], path = a[1];
        byte[] seed = fromHex(a[2]);
        Actor act = actor(name);
        act.submit("shared-value-start " + name, () -> {
            SharedValue v = act.recipe(SharedValue.class, path, () -> new SharedValue(client, path, seed));
            v.getListenable().addListener(new SharedValueListener() {
                @Override
                public void valueHasChanged(SharedValueReader reader, byte[] newValue) {
                    answer("shared-value-changed " + name + " " + toHex(newValue));
                }

                @Override
                public void stateChanged(CuratorFramework c, ConnectionState state) {}
            });
            v.start();
            VersionedValue<byte[]> cur = v.getVersionedValue();
            answer("shared-value-started " + name + " " + toHex(cur.getValue()) + " " + cur.getVersion());
        });
    }

    /** shared-value-set <name> <hex>: setValue, then "shared-value-set <name> <hex>". */
    private void sharedValueSet(String[] a) {
        String name = a[0];
        byte[] value = fromHex(a[1]);
        Actor act = actor(name);
        act.submit("shared-value-set " + name, () -> {
            act.existing(SharedValue.class).setValue(value);
            answer("shared-value-set " + name + " " + toHex(value));
        });
    }

    /** shared-close <name>: closes the name's SharedCount or SharedValue, "shared-closed <name>". */
    private void sharedClose(String[] a) {
        String name = a[0];
        Actor act = actor(name);
        act.submit("shared-close " + name, () -> {
            if (act.recipe instanceof SharedCountHolder) {
                act.existing(SharedCountHolder.class).count.close();
            } else {
                act.existing(SharedValue.class).close();
            }
            answer("shared-closed " + name);
        });
    }

    private static String toHex(byte[] b) {
        if (b.length == 0) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x));
        }
        return sb.toString();
    }

    private static byte[] fromHex(String s) {
        if (s.equals("-")) {
            return new byte[0];
        }
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }
}
