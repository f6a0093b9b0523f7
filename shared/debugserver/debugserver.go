package debugserver

import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"time"

	"go.uber.org/zap"
)

// Options says what the debug listener serves.
type Options struct {
	// Pprof serves Go's profiler under /debug/pprof/.
	Pprof bool
	// Expvars serves /debug/vars: expvar's variables and Vars.
	Expvars bool
	// Vars are the daemon's own variables, each called at every request
	// and written as JSON under its name.
	Vars map[string]func() any
}

// Handler returns the debug listener's mux. Paths it does not serve
// answer 404.
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if o.Expvars {
		mux.HandleFunc("/debug/vars", func(w http.ResponseWriter, r *http.Request) { writeVars(w, o.Vars) })
	}
	return mux
}

// writeVars writes expvar's variables and the daemon's as one JSON
// object, as expvar.Handler does.
func writeVars(w http.ResponseWriter, own map[string]func() any) {
	vars := map[string]json.RawMessage{}
	expvar.Do(func(kv expvar.KeyValue) { vars[kv.Key] = json.RawMessage(kv.Value.String()) })
	for name, f := range own {
		b, err := json.Marshal(f())
		if err != nil {
			b, _ = json.Marshal(err.Error())
		}
		vars[name] = b
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fmt.Fprint(w, "{\n")
	for i, k := range names {
		if i > 0 {
			fmt.Fprint(w, ",\n")
		}
		key, _ := json.Marshal(k)
		fmt.Fprintf(w, "%s: %s", key, vars[k])
	}
	fmt.Fprint(w, "\n}\n")
}

// ErrSameAddress is returned (wrapped) by CheckBind when the debug
// address would share the lookup listener's port.
var ErrSameAddress = errors.New("debugserver: the debug listener may not share the lookup address")

// CheckBind checks a debug bind address: host:port, and not the lookup
// address bind (the same port on the same or a wildcard host), so that
// profiles are never served where clients look keys up.
func CheckBind(debug, bind string) error {
	dh, dp, err := net.SplitHostPort(debug)
	if err != nil {
		return fmt.Errorf("debugserver: %q is not host:port: %w", debug, err)
	}
	bh, bp, err := net.SplitHostPort(bind)
	if err != nil {
		return nil // the lookup address is checked on its own
	}
	if dp != bp || dp == "0" {
		return nil
	}
	if dh == bh || wildcard(dh) || wildcard(bh) {
		return fmt.Errorf("%w (%s)", ErrSameAddress, bind)
	}
	return nil
}

func wildcard(host string) bool { return host == "" || host == "0.0.0.0" || host == "::" }

// Serve listens on bind and serves h until ctx ends; it returns the
// address it listens on, and a channel closed once the listener has
// stopped.
func Serve(ctx context.Context, bind string, h http.Handler, log *zap.Logger) (string, <-chan struct{}, error) {
	lis, err := net.Listen("tcp", bind)
	if err != nil {
		return "", nil, fmt.Errorf("debugserver: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: zap.NewStdLog(log)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("debug listener stopped", zap.Error(err))
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	addr := lis.Addr().String()
	log.Info("debug listener", zap.String("addr", addr))
	return addr, done, nil
}

// Settings is the [debug] section, the same keys in storaged and routerd
// (and sequins): an opt-in listener for Go's profiler and expvar, apart
// from the daemon's own port.
type Settings struct {
	// Bind is the debug listener's address; empty (the default) runs
	// none. It may not be the daemon's own address.
	Bind string `toml:"bind"`
	// Expvars serves /debug/vars (default true).
	Expvars bool `toml:"expvars"`
	// Pprof serves /debug/pprof/ (default true).
	Pprof bool `toml:"pprof"`
}

// DefaultSettings returns the section's defaults: no listener; pprof and
// expvar on when one is bound.
func DefaultSettings() Settings { return Settings{Expvars: true, Pprof: true} }

// Start serves the debug listener s asks for, with the daemon's own
// variables vars, until ctx ends; it returns the address bound, or ""
// when s binds none.
func Start(ctx context.Context, s Settings, vars map[string]func() any, log *zap.Logger) (string, error) {
	if s.Bind == "" {
		return "", nil
	}
	h := Handler(Options{Pprof: s.Pprof, Expvars: s.Expvars, Vars: vars})
	addr, _, err := Serve(ctx, s.Bind, h, log)
	return addr, err
}
