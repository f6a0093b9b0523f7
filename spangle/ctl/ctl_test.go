package ctl

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"spangle/shared/proctest"
	"spangle/shared/source"
	"spangle/shared/versiontest"
)

var storagedBin string

func TestMain(m *testing.M) {
	os.Exit(proctest.RunWithBinary(m, "spangle/storaged", &storagedBin))
}

// writeVersion writes a one-file version whose only record is k=<version>.
func writeVersion(t *testing.T, root, db, version string) {
	t.Helper()
	versiontest.For(t).Write(root, db, version, versiontest.Options{InPlace: true, NoSuccess: true},
		[]versiontest.Record{{Key: []byte("k"), Value: []byte(version)}})
}

func TestPinChecks(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeVersion(t, root, "db", "v1")
	for _, tc := range []struct{ root, db, version string }{
		{root, "db", "v9"}, {root, "../db", "v1"}, {root, "db", "v1\n"}, {"s3://bucket/x", "db", "v1"},
	} {
		if err := Pin(ctx, tc.root, tc.db, tc.version); !errors.Is(err, ErrUsage) {
			t.Errorf("Pin(%q, %q, %q) = %v, want ErrUsage", tc.root, tc.db, tc.version, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "db", source.PinFile)); err == nil {
		t.Fatal("a refused pin wrote a marker")
	}
	if err := Pin(ctx, "file://"+root, "db", "v1"); err != nil {
		t.Fatal(err)
	}
	src, _ := source.Open(root, source.Options{})
	if v, err := src.Pin(ctx, "db"); v != "v1" || err != nil {
		t.Fatalf("the marker written reads as %q, %v", v, err)
	}
	if had, err := Unpin(root, "db"); !had || err != nil {
		t.Fatalf("Unpin = %v, %v", had, err)
	}
	if had, err := Unpin(root, "db"); had || err != nil {
		t.Fatalf("Unpin again = %v, %v", had, err)
	}
}

// The command's pin, status and unpin against a real standalone
// storaged.
func TestPinStatusUnpin(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	writeVersion(t, root, "db", "v1")
	writeVersion(t, root, "db", "v2")
	addr := proctest.FreeAddr(t)
	p := proctest.Start(t, storagedBin, "--source", root, "--local-store", t.TempDir(), "--bind", addr)
	proctest.WaitHealthy(t, addr, 30*time.Second)
	client := &http.Client{Timeout: 5 * time.Second}
	waitStatus := func(want DBPin) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			pins, err := Status(ctx, client, addr)
			if err == nil && len(pins) == 1 && pins[0].Serving == want.Serving && pins[0].Pin == want.Pin &&
				strings.Contains(pins[0].Error, want.Error) && (want.Error != "") == (pins[0].Error != "") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("status %+v (%v), want %+v", pins, err, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitStatus(DBPin{Serving: "v2"})
	if code := Main([]string{"pin", "--source", root, "db", "v1"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("spangle pin: exit %d", code)
	}
	p.Signal(syscall.SIGHUP)
	waitStatus(DBPin{Serving: "v1", Pin: "v1"})
	var out bytes.Buffer
	if code := Main([]string{"status", "--addr", addr}, &out, &bytes.Buffer{}); code != 0 || !strings.Contains(out.String(), "db\tserving v1\tpinned to v1") {
		t.Fatalf("spangle status: exit %d, %q", code, out.String())
	}
	// A marker naming a missing version: nothing changes, the error shows.
	if err := os.WriteFile(filepath.Join(root, "db", source.PinFile), []byte("v7"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Signal(syscall.SIGHUP)
	waitStatus(DBPin{Serving: "v1", Pin: "v1", Error: `"v7" is not in the source`})
	if code := Main([]string{"unpin", "--source", root, "db"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("spangle unpin: exit %d", code)
	}
	p.Signal(syscall.SIGHUP)
	waitStatus(DBPin{Serving: "v2"})
	if code := Main([]string{"pin", "db"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
		t.Fatalf("spangle pin without --source: exit %d, want 2", code)
	}
}

func TestHelpVersionAndMissingFlags(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != 0 || !strings.Contains(out.String(), "spangle pin") {
			t.Errorf("%v: exit %d, stdout %q", args, code, out.String())
		}
	}
	var out bytes.Buffer
	if code := Main([]string{"--version"}, &out, &bytes.Buffer{}); code != 0 || !strings.Contains(out.String(), "commit") {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pin", "mydb", "1"}, "--source is required"},
		{[]string{"unpin", "mydb"}, "--source is required"},
		{[]string{"status"}, "--addr is required"},
		{[]string{"pin", "--source", "/x", "mydb"}, "want 2 arguments (<db> <version>), got 1"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		var errOut bytes.Buffer
		if code := Main(tc.args, &bytes.Buffer{}, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want it to say %q", tc.args, code, errOut.String(), tc.want)
		}
	}
	// Flags may follow the arguments.
	root := t.TempDir()
	if code := Main([]string{"unpin", "mydb", "--source", root}, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Errorf("unpin with the flag last: exit %d", code)
	}
}
