package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"spangle/bench/dataset"
	"spangle/bench/proc"
	"spangle/bench/suite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "loadfloor:", err)
		os.Exit(1)
	}
}

// The two writes of the store's bytes, by when they run.
const (
	partWriteAtOnce = "write the store's bytes, right after freeing the store"
	partWriteLater  = "write the store's bytes, seconds after freeing it"
)

// sample is one measurement: CPU time and wall time.
type sample struct{ cpu, wall time.Duration }

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("loadfloor", flag.ContinueOnError)
	storaged := fs.String("storaged", "bin/storaged", "the storaged binary")
	root := fs.String("root", "", "source root holding the bench's db and version (spanglebench -keep's src or src-plain)")
	rounds := fs.Int("rounds", 5, "rounds; each measures every part once")
	settle := fs.Duration("fresh-wait", 5*time.Second, "wait after freeing the store before the second write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" {
		return errors.New("-root is required")
	}
	files, err := versionFiles(filepath.Join(*root, dataset.DB, dataset.Version))
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(*root), "loadfloor-")
	if err != nil {
		return fmt.Errorf("loadfloor: %w", err)
	}
	defer os.RemoveAll(tmp)

	parts := map[string][]sample{}
	var storeBytes int64
	for r := 0; r < *rounds && ctx.Err() == nil; r++ {
		s, err := decodeOnce(ctx, files)
		if err != nil {
			return err
		}
		parts["decode-only"] = append(parts["decode-only"], s)

		s, n, err := loadOnce(ctx, *storaged, *root, filepath.Join(tmp, "store-"+strconv.Itoa(r)), filepath.Join(tmp, "logs"))
		if err != nil {
			return err
		}
		parts["storaged start to ACTIVE"] = append(parts["storaged start to ACTIVE"], s)
		storeBytes = n

		empty := filepath.Join(tmp, "empty-root")
		if err := os.MkdirAll(empty, 0o755); err != nil {
			return fmt.Errorf("loadfloor: %w", err)
		}
		s, _, err = startOnce(ctx, *storaged, empty, filepath.Join(tmp, "empty-store-"+strconv.Itoa(r)), filepath.Join(tmp, "logs"))
		if err != nil {
			return err
		}
		parts["storaged start on an empty root"] = append(parts["storaged start on an empty root"], s)

		// The store just loaded is freed right before the first write:
		// the kernel hands its pages out again at once.
		if err := os.RemoveAll(filepath.Join(tmp, "store-"+strconv.Itoa(r))); err != nil {
			return fmt.Errorf("loadfloor: %w", err)
		}
		for _, part := range []string{partWriteAtOnce, partWriteLater} {
			if part == partWriteLater {
				time.Sleep(*settle)
			}
			s, err = writeOnce(filepath.Join(tmp, "w"), storeBytes)
			if err != nil {
				return err
			}
			parts[part] = append(parts[part], s)
			if err := os.RemoveAll(filepath.Join(tmp, "w")); err != nil {
				return fmt.Errorf("loadfloor: %w", err)
			}
		}
	}
	fmt.Printf("%d rounds; %d files, %.0f MB of source, a store of %.0f MB; %d CPUs; load average at the end %s\n\n",
		*rounds, len(files), proc.MB(sizeOf(files)), proc.MB(storeBytes), runtime.NumCPU(), suite.LoadAvg())
	fmt.Println("| part | CPU ms (median, min-max) | wall ms (median, min-max) |")
	fmt.Println("|---|---|---|")
	for _, name := range []string{"decode-only", "storaged start to ACTIVE", "storaged start on an empty root",
		partWriteAtOnce, partWriteLater} {
		ss := parts[name]
		c, w := column(ss, func(s sample) time.Duration { return s.cpu }), column(ss, func(s sample) time.Duration { return s.wall })
		fmt.Printf("| %s | %s | %s |\n", name, c, w)
	}
	return nil
}

// versionFiles lists a version directory's data files.
func versionFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loadfloor: %w", err)
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), "_") && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("loadfloor: no data files in %s", dir)
	}
	return files, nil
}

func sizeOf(files []string) int64 {
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// selfCPU is this process's user and system time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// decodeOnce reads the files through (so they are in the page cache, as
// the bench's decode-only finds them) and times dataset.Decode over them,
// as many at a time as there are CPUs.
func decodeOnce(ctx context.Context, files []string) (sample, error) {
	buf := make([]byte, 1<<20)
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return sample{}, fmt.Errorf("loadfloor: %w", err)
		}
		_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		f.Close()
		if err != nil {
			return sample{}, fmt.Errorf("loadfloor: %w", err)
		}
	}
	runtime.GC()
	c0, t0 := selfCPU(), time.Now()
	if _, err := dataset.Decode(ctx, files, runtime.NumCPU()); err != nil {
		return sample{}, err
	}
	return sample{cpu: selfCPU() - c0, wall: time.Since(t0)}, nil
}

// threadsCPU sums the run time of every thread of pid
// (/proc/PID/task/*/schedstat, nanoseconds).
func threadsCPU(pid int) (time.Duration, error) {
	paths, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil {
		return 0, fmt.Errorf("loadfloor: %w", err)
	}
	var sum int64
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("loadfloor: %s: %w", p, err)
		}
		sum += n
	}
	return time.Duration(sum), nil
}

// startOnce starts storaged on root with a new store and waits until it
// answers /healthz (an empty root) and returns its CPU and the time from
// its start.
func startOnce(ctx context.Context, bin, root, store, logs string) (sample, *proc.Process, error) {
	p, err := launch(bin, root, store, logs)
	if err != nil {
		return sample{}, nil, err
	}
	defer p.Stop()
	wall, err := p.WaitFor(ctx, "http://"+p.Addr+"/healthz", 200*time.Microsecond, time.Minute,
		func(int, []byte) (bool, error) { return true, nil })
	if err != nil {
		return sample{}, nil, err
	}
	cpu, err := threadsCPU(p.Pid())
	return sample{cpu: cpu, wall: wall}, p, err
}

// loadOnce starts storaged on root with a new store, waits until the
// bench's version is ACTIVE, and returns its CPU at that moment, the time
// from its start, and the size of the store it wrote.
func loadOnce(ctx context.Context, bin, root, store, logs string) (sample, int64, error) {
	p, err := launch(bin, root, store, logs)
	if err != nil {
		return sample{}, 0, err
	}
	defer p.Stop()
	at, err := p.ActiveAt(ctx, dataset.DB, dataset.Version, time.Minute)
	if err != nil {
		return sample{}, 0, err
	}
	cpu, err := threadsCPU(p.Pid())
	if err != nil {
		return sample{}, 0, err
	}
	n, err := dirSize(store)
	return sample{cpu: cpu, wall: at.Sub(p.Started)}, n, err
}

func launch(bin, root, store, logs string) (*proc.Process, error) {
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, fmt.Errorf("loadfloor: %w", err)
	}
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	return proc.Start("storaged", addr, logs, bin, "--source", root, "--local-store", store, "--bind", addr, "--log-level", "warn")
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("loadfloor: %w", err)
	}
	return n, nil
}

// writeOnce writes n bytes into new files under dir, one writer per CPU,
// in 1 MiB writes, and returns this process's CPU and the wall time.
func writeOnce(dir string, n int64) (sample, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sample{}, fmt.Errorf("loadfloor: %w", err)
	}
	workers := runtime.NumCPU()
	per := n / int64(workers)
	errs := make([]error, workers)
	c0, t0 := selfCPU(), time.Now()
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = writeFile(filepath.Join(dir, strconv.Itoa(i)), per)
		}()
	}
	wg.Wait()
	s := sample{cpu: selfCPU() - c0, wall: time.Since(t0)}
	return s, errors.Join(errs...)
}

func writeFile(path string, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("loadfloor: %w", err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	for n > 0 {
		chunk := min(n, int64(len(buf)))
		if _, err := f.Write(buf[:chunk]); err != nil {
			f.Close()
			return fmt.Errorf("loadfloor: %w", err)
		}
		n -= chunk
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("loadfloor: %w", err)
	}
	return nil
}

// column formats a part's samples as "median (min-max)" in milliseconds.
func column(ss []sample, get func(sample) time.Duration) string {
	if len(ss) == 0 {
		return "-"
	}
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = float64(get(s)) / float64(time.Millisecond)
	}
	sort.Float64s(v)
	return fmt.Sprintf("%.1f (%.1f-%.1f)", v[len(v)/2], v[0], v[len(v)-1])
}
