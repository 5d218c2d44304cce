package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/ecnswitch/ecnswitch/config"
	"github.com/ecnswitch/ecnswitch/internal/httpguard"
)

// Runtime control: the daemon's running config, and how it changes.
//
// The daemon keeps the config its switch runs: the file's, with every
// change made since written in. That copy, not the file, is what `get`
// reports and what a change is made against. `ecnswitch set` (the control
// socket's POST /config/set) and a reload of the file (SIGHUP, or POST
// /config/reload) take one path: config.Set or config.Load make the next
// config, validated as a file is; config.Changes says what differs and
// refuses what cannot change while the switch runs; the changes are
// applied by the ports' workers between two passes (dataplane.Switch's
// Set methods); and only then does the running config become the next
// one. A refused or failed change leaves the switch and the running
// config as they were.

// changeTimeout bounds the wait for the workers to apply one change; a
// worker applies it at the start of its next pass, microseconds away.
const changeTimeout = 5 * time.Second

// maxHistory is how many changes RunningConfig.History keeps.
const maxHistory = 64

// maxSetBody bounds the body of a set request.
const maxSetBody = 64 << 10

// Errors of a change, which the control API answers with 400, 409 and 500.
var (
	// ErrInvalid is wrapped by the errors of a change that does not
	// validate: a bad key or value, an unknown port.
	ErrInvalid = errors.New("invalid change")
	// ErrRefused is wrapped by the errors of a change the switch cannot
	// make while it runs: ports added or removed, a queue count, a
	// scheduler kind.
	ErrRefused = errors.New("refused")
)

// SetRequest is `ecnswitch set port P [queue Q] KEY=VALUE…`, the body of
// POST /config/set.
type SetRequest struct {
	Port  string   `json:"port"`            // a name or an index
	Queue *int     `json:"queue,omitempty"` // nil: the port's keys
	Set   []string `json:"set"`             // KEY=VALUE (config.Assignment)
}

// ChangeRecord is one applied change, as RunningConfig.History and the
// log record it.
type ChangeRecord struct {
	Generation int       `json:"generation"` // the running config's generation it made
	Time       time.Time `json:"time"`
	By         string    `json:"by"` // "set PORT KEY=VALUE …" or "reload FILE"
	Key        string    `json:"key"`
	Old        string    `json:"old"`
	New        string    `json:"new"`
}

// RunningConfig is what GET /config answers, and /stats reports under
// config: the settings the switch runs with now, which changed how.
type RunningConfig struct {
	// Generation counts the changes applied since the switch started: 0
	// until the first set or reload that changed something.
	Generation int `json:"generation"`
	// File is the config file the switch started from and a reload reads.
	File    string                `json:"file,omitempty"`
	Ports   []config.PortSettings `json:"ports"`
	History []ChangeRecord        `json:"history"` // the newest maxHistory, oldest first
}

// Runtime is a running switch's config and the changes made to it.
type Runtime struct {
	target config.Target
	log    *zap.Logger

	mu      sync.Mutex
	cfg     *config.Config
	gen     int
	history []ChangeRecord
}

// NewRuntime returns the runtime control of a switch t built from cfg.
func NewRuntime(cfg *config.Config, t config.Target, log *zap.Logger) *Runtime {
	if log == nil {
		log = zap.NewNop()
	}
	return &Runtime{target: t, cfg: cfg, log: log.Named("config")}
}

// Config returns the config the switch runs now.
func (r *Runtime) Config() *config.Config {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg
}

// Running returns the switch's running settings and their history.
func (r *Runtime) Running() RunningConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	return RunningConfig{Generation: r.gen, File: r.cfg.Path(), Ports: r.cfg.Settings(), History: append([]ChangeRecord(nil), r.history...)}
}

// Set makes the assignments of req on the running config and applies what
// changed. Errors wrap ErrInvalid when the request does not validate, and
// ErrRefused when it asks for what cannot change while the switch runs.
func (r *Runtime) Set(ctx context.Context, req SetRequest) ([]ChangeRecord, error) {
	as, err := config.ParseAssignments(req.Set)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	queue := config.NoQueue
	by := "set port " + req.Port
	if req.Queue != nil {
		queue = *req.Queue
		by += fmt.Sprintf(" queue %d", queue)
	}
	for _, a := range as {
		by += " " + a.String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next, err := r.cfg.Set(req.Port, queue, as)
	if err != nil {
		r.log.Warn("change refused: it does not validate", zap.String("by", by), zap.Error(err))
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	recs, err := r.apply(ctx, next, by)
	if errors.Is(err, ErrRefused) {
		r.log.Warn("change refused; the switch keeps its settings", zap.String("by", by), zap.Error(err))
	}
	return recs, err
}

// Reload reads the file the switch was started from again and applies
// what changed: the running config becomes the file's, and changes made
// with Set that the file does not have are undone. What cannot change
// while the switch runs is refused, and the switch keeps its settings.
func (r *Runtime) Reload(ctx context.Context) ([]ChangeRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	path := r.cfg.Path()
	if path == "" {
		return nil, fmt.Errorf("%w: the switch's config was not read from a file", ErrInvalid)
	}
	next, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return r.apply(ctx, next, "reload "+path)
}

// apply applies what differs between the running config and next, and
// makes next the running config. If a change fails, those applied before
// it are undone, and the running config stays. r.mu is held.
func (r *Runtime) apply(ctx context.Context, next *config.Config, by string) ([]ChangeRecord, error) {
	changes, err := r.cfg.Changes(next)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	ctx, cancel := context.WithTimeout(ctx, changeTimeout)
	defer cancel()
	for i, c := range changes {
		if err := c.Apply(ctx, r.target); err != nil {
			r.log.Error("change failed; undoing those applied before it", zap.String("by", by), zap.Error(err))
			return nil, errors.Join(err, r.undo(next, changes[:i]))
		}
	}
	if len(changes) == 0 {
		r.log.Info("nothing to change", zap.String("by", by))
		r.cfg = next // the same settings, perhaps written otherwise
		return nil, nil
	}
	r.gen++
	now := time.Now()
	recs := make([]ChangeRecord, len(changes))
	for i, c := range changes {
		recs[i] = ChangeRecord{Generation: r.gen, Time: now, By: by, Key: c.Key, Old: c.Old, New: c.New}
		r.log.Info("changed", zap.Int("generation", r.gen), zap.String("by", by), zap.String("key", c.Key),
			zap.String("old", c.Old), zap.String("new", c.New))
	}
	r.history = append(r.history, recs...)
	if n := len(r.history) - maxHistory; n > 0 {
		r.history = append(r.history[:0:0], r.history[n:]...)
	}
	r.cfg = next
	return recs, nil
}

// undo applies, in reverse, what brings back the running config's
// settings for the keys of applied. r.mu is held.
func (r *Runtime) undo(next *config.Config, applied []config.Change) error {
	if len(applied) == 0 {
		return nil
	}
	back, err := next.Changes(r.cfg)
	if err != nil {
		return fmt.Errorf("undo: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), changeTimeout)
	defer cancel()
	var errs []error
	for i := len(back) - 1; i >= 0; i-- {
		for _, a := range applied {
			if back[i].Key == a.Key {
				if err := back[i].Apply(ctx, r.target); err != nil {
					errs = append(errs, fmt.Errorf("undo: %w", err))
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		r.log.Error("undoing a failed change failed too: the switch runs with settings of neither config", zap.Error(err))
		return err
	}
	return nil
}

// Handler serves runtime control, to be mounted on the switch's control
// socket (behind httpguard.Guard):
//
//	GET  /config          → 200 RunningConfig
//	POST /config/set      body: a JSON SetRequest → 200 [ChangeRecord, …] (none: nothing changed)
//	POST /config/reload                          → 200 [ChangeRecord, …]
//
// Errors are {"error": "…"}: 400 for a change that does not validate, 409
// for one the switch cannot make while it runs, 500 for a failure.
func (r *Runtime) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, _ *http.Request) {
		httpguard.WriteJSON(w, http.StatusOK, r.Running())
	})
	mux.HandleFunc("POST /config/set", func(w http.ResponseWriter, req *http.Request) {
		sr, err := decodeSet(req)
		if err != nil {
			writeError(w, err)
			return
		}
		recs, err := r.Set(req.Context(), sr)
		if err != nil {
			writeError(w, err)
			return
		}
		httpguard.WriteJSON(w, http.StatusOK, nonNil(recs))
	})
	mux.HandleFunc("POST /config/reload", func(w http.ResponseWriter, req *http.Request) {
		recs, err := r.Reload(req.Context())
		if err != nil {
			writeError(w, err)
			return
		}
		httpguard.WriteJSON(w, http.StatusOK, nonNil(recs))
	})
	return mux
}

// decodeSet reads a set request: one JSON SetRequest and nothing after it.
func decodeSet(req *http.Request) (SetRequest, error) {
	var sr SetRequest
	b, err := io.ReadAll(io.LimitReader(req.Body, maxSetBody+1))
	switch {
	case err != nil:
		return sr, fmt.Errorf("%w: body: %w", ErrInvalid, err)
	case len(b) > maxSetBody:
		return sr, fmt.Errorf("%w: body: larger than %d bytes", ErrInvalid, maxSetBody)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sr); err != nil {
		return SetRequest{}, fmt.Errorf("%w: body: %w", ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return SetRequest{}, fmt.Errorf("%w: body: more after the request's JSON object", ErrInvalid)
	}
	return sr, nil
}

func nonNil(recs []ChangeRecord) []ChangeRecord {
	if recs == nil {
		return []ChangeRecord{}
	}
	return recs
}

// apiError is the body of an error response.
type apiError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, ErrRefused):
		code = http.StatusConflict
	}
	httpguard.WriteError(w, code, err.Error())
}
