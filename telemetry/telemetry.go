package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/buffer"
	"github.com/ecnswitch/ecnswitch/dataplane"
	"github.com/ecnswitch/ecnswitch/internal/buildinfo"
	"github.com/ecnswitch/ecnswitch/internal/httpguard"
	"github.com/ecnswitch/ecnswitch/timestamp"
)

// Defaults of Options.
const (
	DefaultListen       = "127.0.0.1:9090"
	DefaultSamplePeriod = 100 * time.Microsecond
	DefaultSamples      = 65536
)

// maxQueuesInFlight is how many /queues requests copy the sampler's ring
// at once; more wait their turn.
const maxQueuesInFlight = 4

// maxScrapesInFlight is how many /metrics scrapes run at once; more get
// 503 from promhttp.
const maxScrapesInFlight = 8

// Switch is what telemetry reads; *dataplane.Switch implements it.
type Switch interface {
	Stats() dataplane.Stats
	Buffer() *buffer.MMU
}

var _ Switch = (*dataplane.Switch)(nil)

// Options configure a Server. Zero fields take the defaults.
type Options struct {
	// Listen is the host:port to serve on; default DefaultListen, loopback
	// only. Port 0 picks a free port (see Server.Addr).
	Listen string
	// SamplePeriod is the queue sampler's period; default 100 µs.
	SamplePeriod time.Duration
	// Samples is the sampler's ring length; default 65536.
	Samples int
	// PoolNames label the shared pools; default "0", "1", …
	PoolNames []string
	// Clock stamps samples and snapshots; default timestamp.NewMonotonic().
	// Use the switch's clock so times agree.
	Clock timestamp.Clock
	// Logger receives lifecycle events; default zap.NewNop().
	Logger *zap.Logger
	// Timeouts bound every connection to the server; zero fields take the
	// defaults.
	Timeouts Timeouts
	// Hosts are names a request's Host may carry besides localhost, IP
	// addresses and the machine's name; any other Host gets 403, so that a
	// web page that rebinds its name to this address reads nothing.
	Hosts []string
	// Config, when set, returns the switch's running settings, which
	// /stats reports under config (the daemon's node.RunningConfig).
	Config func() any
}

// Timeouts bound how long one HTTP connection may hold the server; zero
// fields take the defaults (5 s for headers, 10 s for a request, 30 s for
// a response, 60 s idle).
type Timeouts = httpguard.Timeouts

// Server serves a switch's telemetry over HTTP:
//
//	GET /metrics   Prometheus text format (counters and gauges of every port, queue, marker and pool)
//	GET /stats     dataplane.Stats as JSON, with time_ns, pool_names, the build and the running settings (Options.Config)
//	GET /queues    queue-depth time series as JSON (Series); ?since=<ns>&port=<name>[,<name>]&limit=<n>;
//	               at most MaxWindowValues values per response: page with since=next while more is true
//	GET /          a list of the endpoints
//
// Every endpoint is read-only: the switch takes control (captures) only on
// its UNIX socket (package node). More endpoints are added with Handle
// before Start. Requests go through httpguard.Guard: only the allowed
// Hosts, and bodies only as application/json.
type Server struct {
	sw      Switch
	opts    Options
	log     *zap.Logger
	mux     *http.ServeMux
	reg     *prometheus.Registry
	sampler *Sampler
	paths   []string
	build   buildinfo.Info // for /stats
	// queuesBusy bounds the /queues requests copying the ring at once, and
	// so their memory (MaxWindowValues each).
	queuesBusy chan struct{}

	mu     sync.Mutex
	srv    *http.Server
	ln     net.Listener
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// New returns a server for sw. It does not listen until Start.
func New(sw Switch, opts Options) (*Server, error) {
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if opts.SamplePeriod == 0 {
		opts.SamplePeriod = DefaultSamplePeriod
	}
	if opts.Samples == 0 {
		opts.Samples = DefaultSamples
	}
	if opts.Clock == nil {
		opts.Clock = timestamp.NewMonotonic()
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	st := sw.Stats()
	names := make([]string, len(st.Ports))
	for i, p := range st.Ports {
		names[i] = p.Name
	}
	sampler, err := NewSampler(sw.Buffer(), names, opts.PoolNames, opts.Clock, opts.SamplePeriod, opts.Samples)
	if err != nil {
		return nil, err
	}
	s := &Server{sw: sw, opts: opts, log: opts.Logger.Named("telemetry"), mux: http.NewServeMux(), reg: prometheus.NewRegistry(), sampler: sampler, build: buildinfo.Read(),
		queuesBusy: make(chan struct{}, maxQueuesInFlight)}
	if err := s.reg.Register(newCollector(sw, opts.PoolNames)); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorLog: zap.NewStdLog(s.log), MaxRequestsInFlight: maxScrapesInFlight}))
	s.Handle("GET /stats", http.HandlerFunc(s.serveStats))
	s.Handle("GET /queues", http.HandlerFunc(s.serveQueues))
	s.mux.HandleFunc("GET /{$}", s.serveIndex)
	return s, nil
}

// Handle registers h for pattern (http.ServeMux syntax, e.g.
// "GET /workers") and lists it on the index page. Call it before
// Start.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.paths = append(s.paths, pattern)
}

// Handler returns the server's handler, for tests and for embedding: the
// endpoints behind httpguard.Guard, which answers only the allowed Hosts
// and takes bodies only as application/json.
func (s *Server) Handler() http.Handler {
	return httpguard.Guard(s.mux, httpguard.AllowHosts(s.opts.Hosts...))
}

// Registry returns the Prometheus registry, for extra collectors.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Sampler returns the queue sampler.
func (s *Server) Sampler() *Sampler { return s.sampler }

// Start listens on Options.Listen, then serves and samples in the
// background until Shutdown. A listen error (address in use, say) is
// returned here.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("telemetry: already started")
	}
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("telemetry: listen on %s (telemetry.listen): %w", s.opts.Listen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.ln, s.cancel = ln, cancel
	s.srv = httpguard.NewServer(s.Handler(), s.opts.Timeouts, zap.NewStdLog(s.log))
	s.done.Add(2)
	go func() {
		defer s.done.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("serve", zap.Error(err))
		}
	}()
	go func() {
		defer s.done.Done()
		s.sampler.Run(ctx)
	}()
	s.log.Info("telemetry listening", zap.String("addr", ln.Addr().String()),
		zap.Duration("queueSamplePeriod", s.opts.SamplePeriod), zap.Int("queueSamples", s.opts.Samples))
	return nil
}

// Addr returns the address the server listens on, or "" before Start.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops sampling and serving, waiting for requests in flight
// until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv, cancel := s.srv, s.cancel
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	cancel()
	err := srv.Shutdown(ctx)
	s.done.Wait()
	s.log.Info("telemetry stopped")
	return err
}

func (s *Server) serveIndex(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ecnswitch telemetry")
	for _, p := range s.paths {
		fmt.Fprintln(w, "  "+p)
	}
}

func (s *Server) serveStats(w http.ResponseWriter, _ *http.Request) {
	body := StatsResponse{TimeNS: s.opts.Clock.Now(), Stats: s.sw.Stats(), PoolNames: s.opts.PoolNames, Build: &s.build}
	if s.opts.Config != nil {
		body.Config = s.opts.Config()
	}
	httpguard.WriteJSON(w, http.StatusOK, body)
}

func (s *Server) serveQueues(w http.ResponseWriter, r *http.Request) {
	q, code, err := s.decodeQueues(r.URL.Query())
	if err != nil {
		httpError(w, code, "%v", err)
		return
	}
	select {
	case s.queuesBusy <- struct{}{}:
		defer func() { <-s.queuesBusy }()
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = s.sampler.WriteJSON(w, q.since, q.limit, q.sel) // an error means the client went away
}

// queuesQuery is what a /queues request asks for.
type queuesQuery struct {
	since int64 // -1: every sample
	limit int   // 0: no limit
	sel   Selection
}

// decodeQueues reads /queues' parameters, returning the status code of an
// error: 400 for a bad since or limit, 404 for a port the switch lacks.
// Names resolve as they come: a name repeated a million times costs a
// million map lookups, never memory.
func (s *Server) decodeQueues(v url.Values) (queuesQuery, int, error) {
	q := queuesQuery{since: -1}
	var err error
	if p := v.Get("since"); p != "" {
		if q.since, err = strconv.ParseInt(p, 10, 64); err != nil {
			return q, http.StatusBadRequest, fmt.Errorf("since: %q is not an integer time in ns (use the previous response's next)", p)
		}
	}
	if p := v.Get("limit"); p != "" {
		if q.limit, err = strconv.Atoi(p); err != nil || q.limit < 0 {
			return q, http.StatusBadRequest, fmt.Errorf("limit: %q is not a count ≥ 0", p)
		}
	}
	for _, p := range v["port"] {
		for name := range strings.SplitSeq(p, ",") {
			if name == "" {
				continue
			}
			if err := s.sampler.add(&q.sel, name); err != nil {
				return q, http.StatusNotFound, err
			}
		}
	}
	return q, http.StatusOK, nil
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	httpguard.WriteError(w, code, fmt.Sprintf(format, args...))
}
