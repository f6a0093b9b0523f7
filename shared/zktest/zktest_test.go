package zktest_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"spangle/shared/zktest"
)

func TestStartStopRestart(t *testing.T) {
	s := zktest.Start(t)
	t.Logf("started in %v on %s", s.StartDuration(), s.Addr())
	out, err := s.FourLetter("srvr")
	if err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Fatalf("srvr = %q, %v", out, err)
	}
	s.Stop()
	if _, err := s.FourLetter("srvr"); err == nil {
		t.Fatal("srvr answered after Stop")
	}
	s.Stop() // idempotent
	s.Restart()
	t.Logf("restarted in %v", s.StartDuration())
	if out, err := s.FourLetter("mntr"); err != nil || !strings.Contains(out, "zk_znode_count") {
		t.Fatalf("mntr after restart = %q, %v", out, err)
	}
}

func TestProxyCut(t *testing.T) {
	s := zktest.Start(t)
	p := s.Proxy(t)
	ask := func() (string, error) {
		c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("ruok")); err != nil {
			return "", err
		}
		b := make([]byte, 4)
		n, err := c.Read(b)
		return string(b[:n]), err
	}
	if got, err := ask(); got != "imok" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	p.Cut()
	if got, _ := ask(); got == "imok" {
		t.Fatal("answered through a cut proxy")
	}
	p.Heal()
	if got, err := ask(); got != "imok" {
		t.Fatalf("after Heal: %q, %v", got, err)
	}
}

// TestRun starts a server outside the test's cleanup, as the scale
// benchmark does, and checks that it serves mntr and stops.
func TestRun(t *testing.T) {
	s, err := zktest.Run(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	out, err := s.FourLetter("mntr")
	if err != nil || !strings.Contains(out, "zk_znode_count") {
		t.Fatalf("mntr = %q, %v", out, err)
	}
	t.Logf("mntr:\n%s", out)
	s.Stop()
	if _, err := s.FourLetter("srvr"); err == nil {
		t.Fatal("srvr answered after Stop")
	}
}

// TestSuperuser: a server started with Options.Super lets a client
// authenticated as the superuser through an ACL that shuts out everyone
// else, as an operator's superuser does.
func TestSuperuser(t *testing.T) {
	s := zktest.StartWith(t, zktest.Options{Super: "super:pw"})
	owner := s.RawAuth(t, "owner:secret")
	if _, err := owner.Conn.Create("/closed", []byte("x"), 0, zk.DigestACL(zk.PermAll, "owner", "secret")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Raw(t).Conn.Get("/closed"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("an anonymous client read a closed znode: %v", err)
	}
	super := s.RawAuth(t, "super:pw")
	if b, _, err := super.Conn.Get("/closed"); err != nil || string(b) != "x" {
		t.Fatalf("the superuser: %q, %v", b, err)
	}
	if acl := super.ACL("/closed"); len(acl) != 1 || acl[0].ID != zk.DigestACL(zk.PermAll, "owner", "secret")[0].ID {
		t.Fatalf("ACL as the superuser sees it: %v", acl)
	}
	super.Delete("/closed")
}
