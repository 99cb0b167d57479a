// Agent drives the real Apache Curator from Go interop tests (see the Go
// package integration/curator). It reads one command per line on stdin and
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

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;

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
        CuratorFramework client = CuratorFrameworkFactory.newClient(
                argv[0], sessionTimeoutMs, 15_000, new ExponentialBackoffRetry(100, 10));
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
        Thread t = new Thread(() -> {
            // Append mode (O_APPEND) and one write() per line: lines from
            // several processes appending to one file never interleave, and
            // the file's order is the order the writes happened.
            try (FileOutputStream log = new FileOutputStream(logFile, true)) {
                InterProcessMutex m = new InterProcessMutex(client, path);
                for (int i = 0; i < iterations; i++) {
                    m.acquire();
                    try {
                        String node = ZKPaths.getNodeFromPath(holderNode(m));
                        log.write(("enter " + id + " " + node + "\n").getBytes(StandardCharsets.UTF_8));
                        Thread.sleep(holdMs);
                        log.write(("exit " + id + " " + node + "\n").getBytes(StandardCharsets.UTF_8));
                    } finally {
                        m.release();
                    }
                }
                answer("loop-done " + id);
            } catch (Throwable e) {
                answerError("mutex-loop " + id, e);
            }
        }, "loop-" + id);
        t.setDaemon(true);
        t.start();
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

    private void quit() {
        client.close();
        answer("bye");
        System.exit(0);
    }
}
