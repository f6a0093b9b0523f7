package store

import (
	"errors"
	"os"
	"testing"
	"time"

	"spangle/shared/dbver"
	"spangle/shared/source"
)

func TestManifest(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadManifest(dbver.Of("db", "v1")); !errors.Is(err, ErrNoManifest) {
		t.Fatalf("missing manifest: %v", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	files := []source.File{{Name: "part-0", Size: 10, ModTime: now}, {Name: "part-1", Size: 20, ModTime: now}}
	m := Manifest{DB: "db", Version: "v1", NumPartitions: 2, Partitions: []int{0, 1}, Files: files, Complete: true}
	if err := s.WriteManifest(m); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadManifest(dbver.Of("db", "v1"))
	if err != nil || !got.Matches(files, []int{0, 1}) {
		t.Fatalf("ReadManifest = %+v, %v", got, err)
	}
	changed := append([]source.File(nil), files...)
	changed[1].Size++
	if got.Matches(changed, []int{0, 1}) || got.Matches(files[:1], nil) || got.Matches(files, []int{2}) {
		t.Fatal("Matches accepts a different source")
	}
	got.Complete = false
	if got.Matches(files, nil) {
		t.Fatal("Matches accepts an incomplete version")
	}
	list, _ := s.List()
	if len(list["db"]) != 1 {
		t.Fatalf("List = %v", list)
	}
	if err := s.Remove(dbver.Of("db", "v1")); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Fatalf("List after Remove = %v", list)
	}
	if err := s.Remove(dbver.Of("..", "x")); err == nil {
		t.Fatal("Remove accepted a path")
	}
	id1, err := s.NodeID()
	id2, _ := s.NodeID()
	if err != nil || id1 == "" || id1 != id2 {
		t.Fatalf("NodeID = %q, %q, %v", id1, id2, err)
	}
}

// A db's dir removed with its last version while the store is listed
// (Remove runs beside the manager's clean-up of stray versions) is simply
// not listed: the listing does not fail, which would leave every stray
// version on disk.
func TestListWhileADBIsRemoved(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(s.VersionDir(dbver.Of("kept", "v1")), 0o755); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.MkdirAll(s.VersionDir(dbver.Of("churn", "v1")), 0o755)
			s.Remove(dbver.Of("churn", "v1"))
		}
	}()
	defer func() { close(stop); <-done }()
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		got, err := s.List()
		if err != nil {
			t.Fatalf("List while a db is removed: %v", err)
		}
		if len(got["kept"]) != 1 {
			t.Fatalf("List lost db kept: %v", got)
		}
	}
}

// TestRemoveRacesCreate: removing one version of a db deletes the db's
// directory once it is empty; that must never make creating another
// version of the same db fail (a cancelled load cleaning up just as a
// newer version starts).
func TestRemoveRacesCreate(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 500
	errc := make(chan error, 2)
	for _, v := range []string{"v1", "v2"} {
		go func() {
			for range rounds {
				if err := s.WriteManifest(Manifest{DB: "db", Version: v}); err != nil {
					errc <- err
					return
				}
				if err := s.Remove(dbver.Of("db", v)); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range 2 { // both done before the TempDir goes
		if err := <-errc; err != nil {
			t.Errorf("a version's removal broke another's creation: %v", err)
		}
	}
}
