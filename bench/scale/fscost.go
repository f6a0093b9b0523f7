package scale

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// createCost makes n small partitions in dir as a store holds them (a
// directory of three files of 2 KB, each file and the directory synced)
// and returns the CPU time, user and system, the calling thread spent a
// created inode, in microseconds. The files are left for the run's
// cleanup: removing them here would make the next creations dearer.
func createCost(dir string, n int) (float64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := bytes.Repeat([]byte{'x'}, 2048)
	t0, err := threadCPU()
	if err != nil {
		return 0, err
	}
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(p, 0o755); err != nil {
			return 0, fmt.Errorf("scale: %w", err)
		}
		for _, name := range []string{"a", "b", "c"} {
			if err := writeSynced(filepath.Join(p, name), buf); err != nil {
				return 0, err
			}
		}
		if err := syncPath(p); err != nil {
			return 0, err
		}
	}
	t1, err := threadCPU()
	if err != nil {
		return 0, err
	}
	return float64((t1 - t0).Microseconds()) / float64(4*n), nil
}

// writeSynced creates path holding b, synced.
func writeSynced(path string, b []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	_, err = f.Write(b)
	return syncClose(f, err)
}

// syncPath syncs path (a directory: the names created in it).
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	return syncClose(f, nil)
}

// syncClose syncs f unless err (from writing it) is set, closes it, and
// returns the first error.
func syncClose(f *os.File, err error) error {
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	return nil
}

// threadCPU is the calling OS thread's user and system CPU time.
func threadCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, fmt.Errorf("scale: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// scrapeBy reads the Prometheus text at url and sums metric name's
// samples by the value of label (samples without it are left out).
func scrapeBy(ctx context.Context, url, name, label string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scale: %w", err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scale: %w", err)
	}
	defer resp.Body.Close()
	return sumBy(io.LimitReader(resp.Body, 4<<20), name, label)
}

// sumBy sums metric name's samples in the Prometheus text r by the value
// of label.
func sumBy(r io.Reader, name, label string) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		labels, ok := strings.CutPrefix(sc.Text(), name+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(labels, "} ")
		if !ok {
			return nil, fmt.Errorf("scale: %s: malformed sample %q", name, sc.Text())
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("scale: %s: %w", name, err)
		}
		for _, kv := range strings.Split(labels, ",") {
			k, q, _ := strings.Cut(kv, "=")
			if k != label {
				continue
			}
			if s, err := strconv.Unquote(q); err == nil {
				out[s] += v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scale: %s: %w", name, err)
	}
	return out, nil
}
