package memtrim

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
)

// dropExecutable drops the resident pages of the executable's read-only
// private mappings that hold no private copy of a page (madvise
// DONTNEED).
func dropExecutable() (Result, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return Result{}, fmt.Errorf("memtrim: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return Result{}, fmt.Errorf("memtrim: %w", err)
	}
	ms, err := droppable(f, exe)
	f.Close()
	if err != nil {
		return Result{}, err
	}
	var r Result
	for _, m := range ms {
		if m.anonymous != 0 { // a private copy, or smaps did not say
			r.Skipped++
			continue
		}
		if m.rss <= 0 {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
			return r, fmt.Errorf("memtrim: madvise %x-%x: %w", m.start, m.end, errno)
		}
		r.ExecutableDropped += m.rss
	}
	return r, nil
}

// mapping is one mapping of smaps: its range and how many of its bytes
// are resident, and of them private copies (-1 until smaps says).
type mapping struct {
	start, end     uintptr
	rss, anonymous int64
}

// droppable reads smaps (the format of /proc/PID/smaps) and returns the
// mappings of path that can only be read (no write permission) and are
// private: their pages are the file's unless Anonymous says otherwise.
func droppable(smaps io.Reader, path string) ([]mapping, error) {
	var (
		out []mapping
		cur *mapping
	)
	sc := bufio.NewScanner(smaps)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if m, ok := parseHeader(line); ok {
			cur = nil
			if m.path == path && m.perms[0] == 'r' && m.perms[1] == '-' && m.perms[3] == 'p' {
				out = append(out, m.mapping)
				cur = &out[len(out)-1]
			}
			continue
		}
		if cur == nil {
			continue
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch string(name) {
		case "Rss":
			cur.rss = parseKB(value)
		case "Anonymous":
			cur.anonymous = parseKB(value)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("memtrim: reading smaps: %w", err)
	}
	return out, nil
}

type header struct {
	mapping
	perms [4]byte
	path  string
}

// parseHeader parses a mapping's first line in smaps
// ("start-end perms offset dev inode path"); false for any other line.
func parseHeader(line []byte) (header, bool) {
	f := bytes.Fields(line)
	if len(f) < 5 || len(f[1]) != 4 {
		return header{}, false
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return header{}, false
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return header{}, false
	}
	h := header{mapping: mapping{start: uintptr(start), end: uintptr(end), rss: -1, anonymous: -1}}
	copy(h.perms[:], f[1])
	// The path is what follows the fifth field; it may hold spaces.
	rest := line
	for range 5 {
		rest = bytes.TrimLeft(rest, " ")
		i := bytes.IndexByte(rest, ' ')
		if i < 0 {
			rest = nil
			break
		}
		rest = rest[i:]
	}
	h.path = string(bytes.TrimSpace(rest))
	return h, true
}

// parseKB reads smaps' " 1234 kB" as bytes; -1 when it is not a size.
func parseKB(v []byte) int64 {
	f := bytes.Fields(v)
	if len(f) != 2 || string(f[1]) != "kB" {
		return -1
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return -1
	}
	return n << 10
}
