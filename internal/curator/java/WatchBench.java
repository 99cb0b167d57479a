// WatchBench is the Curator side of make bench-watch (the Go package
// integration/internal/watchbench): it starts one of Curator's caches on a
// tree the Go side made, measures what the cache added to this JVM, and times
// events. Like the rest of the Agent it uses Curator's public API only.
package zkrecipes;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.cache.TreeCacheEvent;
import org.apache.curator.utils.ZKPaths;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.framework.state.ConnectionState;

/**
 * One cache at a time:
 *
 * <pre>
 * watch-start curatorcache|treecache|servicecache &lt;path&gt;
 *     watch-started kind=&lt;kind&gt; init_ms=&lt;ms&gt; threads=&lt;added&gt; heap=&lt;bytes added&gt; nodes=&lt;n&gt;
 * watch-events &lt;n&gt; &lt;pathsFile&gt; &lt;seed&gt;
 *     watch-events p50_us=&lt;us&gt; p99_us=&lt;us&gt; n=&lt;n&gt;
 * watch-close
 *     watch-closed
 * </pre>
 *
 * For servicecache the path is basePath/name. Heap is the used heap after
 * System.gc() (twice), before the cache was built and once it said it was
 * initialized; threads is the JVM's live thread count, the same two times.
 * watch-events sets n nodes picked at random (seeded) from pathsFile, one
 * path a line, each to data of the same length (a service instance's node to
 * its own JSON with another port), and times each from just
 * before setData to the cache's event for it.
 */
final class WatchBench {
    private static final com.fasterxml.jackson.databind.ObjectMapper JSON = new com.fasterxml.jackson.databind.ObjectMapper();
    private final CuratorFramework client;
    private final Consumer<String> answer;

    private AutoCloseable cache;
    private ServiceDiscovery<Map> discovery;
    private boolean service;
    private final LinkedBlockingQueue<String> changed = new LinkedBlockingQueue<>();

    WatchBench(CuratorFramework client, Consumer<String> answer) {
        this.client = client;
        this.answer = answer;
    }

    private static long usedHeap() throws InterruptedException {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 2; i++) {
            System.gc();
            Thread.sleep(50);
        }
        return rt.totalMemory() - rt.freeMemory();
    }

    private static int threads() {
        return ManagementFactory.getThreadMXBean().getThreadCount();
    }

    void start(String[] a) throws Exception {
        if (cache != null) {
            throw new IllegalStateException("a cache is running");
        }
        String kind = a[0], path = a[1];
        long heap0 = usedHeap();
        int threads0 = threads();
        CountDownLatch initialized = new CountDownLatch(1);
        long t0 = System.nanoTime();
        int nodes;
        switch (kind) {
            case "curatorcache": {
                CuratorCache c = CuratorCache.build(client, path);
                c.listenable().addListener(CuratorCacheListener.builder()
                        .forChanges((before, after) -> changed.add(after.getPath()))
                        .forInitialized(initialized::countDown).build());
                c.start();
                await(initialized, kind);
                cache = c;
                nodes = (int) c.size();
                break;
            }
            case "treecache": {
                TreeCache c = TreeCache.newBuilder(client, path).build();
                c.getListenable().addListener((cl, ev) -> {
                    if (ev.getType() == TreeCacheEvent.Type.INITIALIZED) {
                        initialized.countDown();
                    } else if (ev.getType() == TreeCacheEvent.Type.NODE_UPDATED) {
                        changed.add(ev.getData().getPath());
                    }
                });
                c.start();
                await(initialized, kind);
                cache = c;
                nodes = -1; // TreeCache has no size; the Go side knows the tree
                break;
            }
            case "servicecache": {
                ZKPaths.PathAndNode pn = ZKPaths.getPathAndNode(path);
                discovery = ServiceDiscoveryBuilder.builder(Map.class).client(client).basePath(pn.getPath()).build();
                discovery.start();
                ServiceCache<Map> c = discovery.serviceCacheBuilder().name(pn.getNode()).build();
                c.addListener(new ServiceCacheListener() {
                    @Override
                    public void cacheChanged() {
                        changed.add("");
                    }

                    @Override
                    public void stateChanged(CuratorFramework cl, ConnectionState s) {
                    }
                });
                c.start(); // returns once the instances are read
                cache = c;
                service = true;
                nodes = c.getInstances().size();
                break;
            }
            default:
                throw new IllegalArgumentException("unknown cache " + kind);
        }
        long initMs = (System.nanoTime() - t0) / 1_000_000;
        long heap1 = usedHeap();
        int threads1 = threads();
        changed.clear();
        answer.accept("watch-started kind=" + kind + " init_ms=" + initMs + " threads=" + (threads1 - threads0)
                + " heap=" + (heap1 - heap0) + " nodes=" + nodes);
    }

    private static void await(CountDownLatch l, String kind) throws InterruptedException {
        if (!l.await(10, TimeUnit.MINUTES)) {
            throw new IllegalStateException(kind + " not initialized after 10 minutes");
        }
    }

    void events(String[] a) throws Exception {
        if (cache == null) {
            throw new IllegalStateException("no cache running");
        }
        int n = Integer.parseInt(a[0]);
        List<String> paths = Files.readAllLines(Paths.get(a[1]), StandardCharsets.UTF_8);
        Random rnd = new Random(Long.parseLong(a[2]));
        long[] us = new long[n];
        for (int i = 0; i < n; i++) {
            String p = paths.get(rnd.nextInt(paths.size()));
            byte[] data = client.getData().forPath(p);
            if (service) {
                @SuppressWarnings("unchecked")
                Map<String, Object> inst = JSON.readValue(data, java.util.LinkedHashMap.class);
                inst.put("port", 20000 + i);
                data = JSON.writeValueAsBytes(inst);
            } else {
                data = Arrays.copyOf(data, data.length);
                data[0] = (byte) ('a' + i % 26);
            }
            changed.clear();
            long t0 = System.nanoTime();
            client.setData().forPath(p, data);
            String want = service ? "" : p;
            while (true) {
                String got = changed.poll(30, TimeUnit.SECONDS);
                if (got == null) {
                    throw new IllegalStateException("no event for " + p + " within 30s");
                }
                if (got.equals(want)) {
                    break;
                }
            }
            us[i] = (System.nanoTime() - t0) / 1000;
        }
        Arrays.sort(us);
        answer.accept("watch-events p50_us=" + us[n / 2] + " p99_us=" + us[Math.min(n - 1, n * 99 / 100)] + " n=" + n);
    }

    void close(String[] a) throws Exception {
        if (cache != null) {
            cache.close();
        }
        if (discovery != null) {
            discovery.close();
        }
        cache = null;
        discovery = null;
        service = false;
        answer.accept("watch-closed");
    }
}
