//go:build e2e

package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"spangle/e2e/framework"
	"spangle/e2e/load"
)

// noZKCredential: the cluster runs with a ZooKeeper credential (the
// framework's, random per run); a storaged started without it cannot
// register. It says so, naming the znode, routerd never lists it or asks
// it, and reads go on with no failure. The credential is in no
// container's log.
func (s *suite) noZKCredential(t *testing.T, ctx context.Context, r *row) {
	cred := s.c.ZKAuth()
	if cred == "" {
		t.Fatal("the cluster runs without a ZooKeeper credential")
	}
	_, password, _ := strings.Cut(cred, ":")
	base := s.routerURL(t, ctx)
	run := load.Start(ctx, s.loadOptions(base))
	observe(ctx, 2*time.Second)
	const addr = "rogue:9599"
	rogue, err := s.extraStoraged(t, ctx, "rogue", []string{"SPANGLE_ZK_AUTH="}, "--advertise", addr)
	if err != nil {
		run.Stop()
		t.Fatal(err)
	}
	var logs string
	err = framework.WaitFor(ctx, time.Minute, time.Second, "the rogue storaged's refusal", func(ctx context.Context) (bool, error) {
		out, lerr := s.c.LogsOf(ctx, rogue)
		logs = out
		return strings.Contains(out, "not authenticated") && strings.Contains(out, "/"+s.c.Name()+"/v1/nodes/"), lerr
	})
	if err != nil {
		t.Logf("rogue's log:\n%s", logs)
		run.Stop()
		t.Fatal(err)
	}
	observe(ctx, 10*time.Second)
	res := run.Stop()
	*r = fromResult(r.name, res)
	checkLoad(t, res)
	for node := range res.ProxiedTo {
		if strings.Contains(node, "rogue") {
			t.Errorf("routerd sent lookups to the node without the credential: %v", res.ProxiedTo)
		}
	}
	status, err := s.get(ctx, base+"/")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(status, addr) {
		t.Errorf("routerd's status lists %s", addr)
	}
	// The credential: loaded by every storaged, shown by none.
	for _, svc := range append([]string{framework.ZooKeeper, framework.Routerd}, framework.StoragedServices()...) {
		out, err := s.c.Logs(ctx, svc)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, password) {
			t.Errorf("%s's log holds the ZooKeeper password", svc)
		}
		if svc != framework.ZooKeeper && svc != framework.Routerd && !strings.Contains(out, "ZooKeeper credential loaded") {
			t.Errorf("%s did not load the ZooKeeper credential", svc)
		}
		if strings.Contains(out, "open to every ZooKeeper client") {
			t.Errorf("%s found znodes open to every client in a cluster that always had a credential", svc)
		}
	}
	if strings.Contains(logs, password) {
		t.Error("the rogue's log holds the ZooKeeper password")
	}
}

// extraStoraged starts one more storaged (a copy of storaged1's
// container: its image, environment and certificate mount) named name,
// in the cluster, on the source, with a local store of its own, env
// added and args (--advertise, --config, ...) after the common flags. It
// is removed when t ends.
func (s *suite) extraStoraged(t *testing.T, ctx context.Context, name string, env []string, args ...string) (string, error) {
	common := []string{"--zk", "zk:2181", "--cluster", s.c.Name(), "--bind", "0.0.0.0:9599",
		"--source", "s3://spangle", "--local-store", "/tmp/" + name}
	container, err := s.c.RunExtra(ctx, framework.StoragedServices()[0], name, env, append(common, args...)...)
	if err != nil {
		return "", err
	}
	t.Cleanup(func() {
		if err := s.c.RemoveExtra(context.WithoutCancel(ctx), container); err != nil {
			t.Errorf("removing %s: %v", container, err)
		}
	})
	return container, nil
}

// get returns the body of a GET asking for JSON, over the cluster's
// TLS.
func (s *suite) get(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.c.HTTPClient().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), errors.New("GET " + url + ": " + resp.Status)
	}
	return string(b), err
}
