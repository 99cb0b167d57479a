package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/zkrecipes/zkrecipes/conn"
	"github.com/zkrecipes/zkrecipes/framework"
)

// metricsServer is --metrics-addr: the client's OpenTelemetry metrics in
// Prometheus's text format on /metrics, with the Go runtime's and the
// process's (go_*, process_*), and on /healthz whether zkr's coordination
// is sound right now. The library leaves the exporter to the application;
// zkr is one, so it picks Prometheus, what operators scrape.
type metricsServer struct {
	addr     string // as listened on (a :0 port resolved)
	provider *sdkmetric.MeterProvider
	srv      *http.Server
	served   chan struct{} // closed when Serve has returned

	client atomic.Pointer[framework.Client]
	doing  atomic.Pointer[activity]
}

// activity is what zkr does, for /healthz: waiting for PATH, or holding it
// while err is nil.
type activity struct {
	what string
	err  func() error // nil while waiting
}

// startMetrics listens on addr at once, so that a taken port fails zkr
// before it queues, and serves until close.
func startMetrics(addr string) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	reg := prometheus.NewRegistry()
	// What every Go program's /metrics has, and dashboards expect.
	err = errors.Join(
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})))
	var exp *otelprom.Exporter
	if err == nil {
		exp, err = otelprom.New(otelprom.WithRegisterer(reg))
	}
	var res *resource.Resource
	if err == nil {
		// Without a service name the SDK makes one up from the
		// executable's name ("unknown_service:zkr").
		res, err = resource.New(context.Background(), resource.WithTelemetrySDK(),
			resource.WithAttributes(attribute.String("service.name", "zkr"), attribute.String("service.version", buildVersion())))
	}
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	m := &metricsServer{
		addr:     ln.Addr().String(),
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res)),
		served:   make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", m.healthz)
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(m.served)
		_ = m.srv.Serve(ln) // ErrServerClosed once close is called
	}()
	return m, nil
}

// option hands the client zkr's meter provider.
func (m *metricsServer) option() framework.Option { return framework.WithMeterProvider(m.provider) }

// follow starts reporting on c's session; the server stops with c's Close.
func (m *metricsServer) follow(c *framework.Client) {
	m.client.Store(c)
	c.OnClose(m.close)
}

// waiting and holding say what zkr does, for /healthz.
func (m *metricsServer) waiting(path string) {
	m.doing.Store(&activity{what: "waiting for " + path})
}

func (m *metricsServer) holding(path string, token int64, err func() error) {
	m.doing.Store(&activity{what: fmt.Sprintf("holding %s (fencing token %d)", path, token), err: err})
}

// healthz answers 200 while the session is connected and what zkr holds is
// still trusted (or it is waiting), 503 otherwise, with one line saying
// which: a probe that restarts zkr on a lost hold, or an alert on a
// suspended session, needs nothing else.
func (m *metricsServer) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	c := m.client.Load()
	if c == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "connecting")
		return
	}
	if s := c.State(); s != conn.StateConnected && s != conn.StateReconnected {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "session %v\n", s)
		return
	}
	a := m.doing.Load()
	if a == nil {
		fmt.Fprintln(w, "ok")
		return
	}
	if a.err != nil {
		if err := a.err(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "lost: %s: %v\n", a.what, err)
			return
		}
	}
	fmt.Fprintf(w, "ok: %s\n", a.what)
}

// close stops serving and the meter provider; idempotent.
func (m *metricsServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := m.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		m.srv.Close()
	}
	<-m.served
	_ = m.provider.Shutdown(ctx)
}

// waiting and holding tell --metrics-addr's /healthz, if it is served.
func (g *globals) waiting(path string) {
	if g.metrics != nil {
		g.metrics.waiting(path)
	}
}

func (g *globals) holding(path string, token int64, err func() error) {
	if g.metrics != nil {
		g.metrics.holding(path, token, err)
	}
}
