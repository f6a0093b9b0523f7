package framework

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"spangle/e2e/dataset"
	"spangle/shared/certgen"
	"spangle/shared/nodetest"
	"spangle/shared/tlsconfig"
	"spangle/shared/wire"
)

// Service names in deploy/docker-compose.yml.
const (
	ZooKeeper = "zk"
	Routerd   = "routerd"
	// S3 is the S3 server the storaged read their source from.
	S3 = "s3"
)

// PeerIdentity is the identity every storaged's certificate carries and
// storaged.toml's peer_names lists: only it reaches the peer endpoints.
const PeerIdentity = "spiffe://spangle/storaged"

// CertsMount is where the containers see the certificate directory.
const CertsMount = "/etc/spangle/tls"

// CertOptions are the names of the cluster's certificates: the storaged
// (server and peer client) for their service names, the loopback
// address the tests reach them on, and PeerIdentity; routerd for its
// service name and loopback. The framework makes its set with them, and
// so does a test that rotates it.
func CertOptions(validity time.Duration) certgen.SetOptions {
	return certgen.SetOptions{
		Names:       append(StoragedServices(), "localhost", "127.0.0.1", PeerIdentity),
		RouterNames: []string{Routerd, "localhost", "127.0.0.1"},
		Validity:    validity,
	}
}

// StoragedServices returns the storaged service names.
func StoragedServices() []string { return []string{"storaged1", "storaged2", "storaged3"} }

// Ports inside the containers.
const (
	storagedPort = "9599"
	routerdPort  = "9590"
)

// Options configures Up. Zero values are the defaults noted.
type Options struct {
	// ComposeFile defaults to deploy/docker-compose.yml of this checkout.
	ComposeFile string
	// ExtraFiles are compose files laid over ComposeFile, in order (an
	// override for the official ZooKeeper image, say).
	ExtraFiles []string
	// Project is the compose project name; default spangle-e2e-<random>,
	// so runs never share containers or volumes.
	Project string
	// Cluster is the cluster name in ZooKeeper; default e2e.
	Cluster string
	// Tag of the spangle images; default $SPANGLE_TAG or dev.
	Tag string
	// ZKImage defaults to $ZK_IMAGE or spangle/zookeeper:3.8-bookworm;
	// Up checks that it exists only without ExtraFiles.
	ZKImage string
	// Initial is written into the source root before the cluster starts;
	// none when Version is empty.
	Initial dataset.Spec
	// Also are more versions (other dbs, say) written before the start.
	Also []dataset.Spec
	// Logf receives progress lines; default none.
	Logf func(format string, args ...any)
	// NoZKAuth runs the storaged without a ZooKeeper credential. By
	// default each run makes a random one (never written to disk) and
	// gives it to the storaged as SPANGLE_ZK_AUTH, so that the cluster's
	// znodes carry its ACL.
	NoZKAuth bool
}

// Cluster is a running compose cluster. Its methods are safe for
// concurrent use.
type Cluster struct {
	opts    Options
	compose []string
	env     []string
	source  string // host directory the S3 server serves as bucket "spangle"
	certs   string // host directory mounted as CertsMount
	zkAuth  string // the storaged's ZooKeeper credential, user:password; "" for none
	network string
	// tls follows the client certificate and CA in certs (rotated by a
	// test, say) until stopTLS.
	tls     *tlsconfig.Source
	stopTLS context.CancelFunc
	http    *http.Client

	mu  sync.Mutex
	ids map[string]string // service -> container id; guarded by mu
}

// Up starts a cluster and returns once every container runs (not yet
// healthy: see WaitHealthy). On error whatever started is removed.
func Up(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.ComposeFile == "" {
		_, file, _, _ := runtime.Caller(0)
		opts.ComposeFile = filepath.Join(filepath.Dir(file), "..", "..", "deploy", "docker-compose.yml")
	}
	if opts.Project == "" {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("framework: %w", err)
		}
		opts.Project = "spangle-e2e-" + hex.EncodeToString(b[:])
	}
	if opts.Cluster == "" {
		opts.Cluster = "e2e"
	}
	if opts.Tag == "" {
		opts.Tag = envOr("SPANGLE_TAG", "dev")
	}
	if opts.ZKImage == "" {
		opts.ZKImage = envOr("ZK_IMAGE", "spangle/zookeeper:3.8-bookworm")
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	images := []string{"spangle/storaged:" + opts.Tag, "spangle/routerd:" + opts.Tag, "spangle/versitygw:" + opts.Tag}
	if len(opts.ExtraFiles) == 0 {
		// An override may bring a ZooKeeper image of its own, pulled.
		images = append(images, opts.ZKImage)
	}
	for _, img := range images {
		if !imageExists(ctx, img) {
			return nil, fmt.Errorf("framework: image %s is missing; build the images with `make images`", img)
		}
	}
	compose, err := composeCommand(ctx)
	if err != nil {
		return nil, err
	}
	zkAuth := ""
	if !opts.NoZKAuth {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("framework: %w", err)
		}
		zkAuth = "spangle:" + hex.EncodeToString(b[:])
	}
	source, err := os.MkdirTemp("", "spangle-e2e-source-")
	if err != nil {
		return nil, fmt.Errorf("framework: %w", err)
	}
	if err := os.Chmod(source, 0o755); err != nil {
		return nil, fmt.Errorf("framework: %w", err)
	}
	certs, src, err := makeCerts()
	if err != nil {
		os.RemoveAll(source)
		return nil, err
	}
	tlsCtx, stopTLS := context.WithCancel(context.WithoutCancel(ctx))
	go src.Run(tlsCtx)
	compose = append(compose, "-p", opts.Project, "-f", opts.ComposeFile)
	for _, f := range opts.ExtraFiles {
		compose = append(compose, "-f", f)
	}
	c := &Cluster{
		opts:    opts,
		compose: compose,
		env: []string{
			"SPANGLE_SOURCE=" + source, "SPANGLE_CLUSTER=" + opts.Cluster,
			"SPANGLE_TAG=" + opts.Tag, "ZK_IMAGE=" + opts.ZKImage,
			// Empty host ports: the engine picks free ones.
			"ROUTERD_PORT=", "STORAGED1_PORT=", "STORAGED2_PORT=", "STORAGED3_PORT=",
			"SPANGLE_ZK_AUTH=" + zkAuth, "SPANGLE_CERTS=" + certs,
		},
		zkAuth:  zkAuth,
		source:  source,
		certs:   certs,
		network: opts.Project + "_default",
		tls:     src,
		stopTLS: stopTLS,
		http: &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: src.ClientConfig("127.0.0.1")},
			Timeout: 5 * time.Second},
		ids: map[string]string{},
	}
	if opts.Initial.Version != "" {
		if _, err := dataset.Write(source, opts.Initial); err != nil {
			c.removeDirs()
			return nil, err
		}
	}
	for _, spec := range opts.Also {
		if _, err := dataset.Write(source, spec); err != nil {
			c.removeDirs()
			return nil, err
		}
	}
	opts.Logf("compose project %s, source root %s, certificates %s", opts.Project, source, certs)
	if _, err := c.composeRun(ctx, "up", "-d"); err != nil {
		c.Down(context.WithoutCancel(ctx))
		return nil, err
	}
	for _, svc := range append([]string{ZooKeeper, Routerd, S3}, StoragedServices()...) {
		out, err := c.composeRun(ctx, "ps", "-q", svc)
		id := strings.TrimSpace(out)
		if err == nil && id == "" {
			err = fmt.Errorf("framework: no container for %s", svc)
		}
		if err != nil {
			c.Down(context.WithoutCancel(ctx))
			return nil, err
		}
		c.ids[svc] = id
	}
	return c, nil
}

// makeCerts writes the cluster's certificates (CertOptions, as `spangle
// certs` does) into a new directory the containers can read, and returns
// it with a Source for the tests' own clients: the client certificate
// and the CA, re-read every second so that a rotation reaches them too.
func makeCerts() (string, *tlsconfig.Source, error) {
	dir, err := os.MkdirTemp("", "spangle-e2e-certs-")
	if err != nil {
		return "", nil, fmt.Errorf("framework: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("framework: %w", err)
	}
	if err := certgen.WriteSet(dir, CertOptions(0)); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	src, err := tlsconfig.New(tlsconfig.Options{Settings: tlsconfig.Settings{
		CertFile: filepath.Join(dir, certgen.ClientFile), KeyFile: filepath.Join(dir, certgen.ClientKeyFile),
		CAFile: filepath.Join(dir, certgen.CAFile)}, Interval: time.Second})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, src, nil
}

func (c *Cluster) removeDirs() error {
	c.stopTLS()
	err := os.RemoveAll(c.source)
	if cerr := os.RemoveAll(c.certs); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("framework: %w", err)
	}
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func (c *Cluster) composeRun(ctx context.Context, args ...string) (string, error) {
	all := append(append([]string(nil), c.compose[1:]...), args...)
	return run(ctx, c.env, c.compose[0], all...)
}

// Down removes the containers, network and volumes, the source root and
// the certificates.
func (c *Cluster) Down(ctx context.Context) error {
	_, err := c.composeRun(ctx, "down", "-v", "--remove-orphans", "-t", "2")
	if rerr := c.removeDirs(); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// CertsDir is the host directory holding the cluster's certificates
// (certgen's file names), mounted read-only as CertsMount in every
// storaged and routerd, which re-read them when they change: a test
// rotates them by writing new files there (certgen.WriteFile).
func (c *Cluster) CertsDir() string { return c.certs }

// TLS is the client config of the tests' own requests (the load, status
// and health polls): the client certificate in CertsDir and its CA,
// current after a rotation. It verifies the server for 127.0.0.1, where
// the containers' ports are published.
func (c *Cluster) TLS() *tls.Config { return c.tls.ClientConfig("127.0.0.1") }

// HTTPClient is a keep-alive client speaking TLS as TLS says.
func (c *Cluster) HTTPClient() *http.Client { return c.http }

// ReloadTLS makes the tests' clients read the certificate files now
// rather than within a second; an error says the files on disk are not
// a valid set (the previous one stays in use).
func (c *Cluster) ReloadTLS() error { return c.tls.Reload() }

// Project is the compose project name.
func (c *Cluster) Project() string { return c.opts.Project }

// Name is the cluster's name in ZooKeeper.
func (c *Cluster) Name() string { return c.opts.Cluster }

// ZKAuth is the storaged's ZooKeeper credential, user:password, or ""
// (Options.NoZKAuth). A test may look for it where it must not be.
func (c *Cluster) ZKAuth() string { return c.zkAuth }

// RunExtra starts one more container of service svc (its image,
// environment, volumes and networks), named <project>-<name>, with env
// added (KEY=VALUE; KEY= empties a variable) and args as its command; its
// HTTP port is published on a free loopback port (ExtraURL). It returns
// the container's name, which other containers resolve on the cluster
// network, for LogsOf, ExtraURL and RemoveExtra.
func (c *Cluster) RunExtra(ctx context.Context, svc, name string, env []string, args ...string) (string, error) {
	container := c.opts.Project + "-" + name
	cmd := []string{"run", "-d", "--no-deps", "--name", container, "-p", "127.0.0.1::" + portOf(svc)}
	for _, e := range env {
		cmd = append(cmd, "-e", e)
	}
	cmd = append(append(cmd, svc), args...)
	if _, err := c.composeRun(ctx, cmd...); err != nil {
		return "", err
	}
	return container, nil
}

// LogsOf returns a container's log (stdout and stderr), by name.
func (c *Cluster) LogsOf(ctx context.Context, container string) (string, error) {
	return runCombined(ctx, "docker", "logs", container)
}

// RemoveExtra removes a container RunExtra started.
func (c *Cluster) RemoveExtra(ctx context.Context, container string) error {
	_, err := run(ctx, nil, "docker", "rm", "-f", container)
	return err
}

// SourceDir is the host directory the storaged see as their source root.
func (c *Cluster) SourceDir() string { return c.source }

// Publish writes a new version into the source root.
func (c *Cluster) Publish(s dataset.Spec) error {
	_, err := dataset.Write(c.source, s)
	return err
}

func (c *Cluster) id(svc string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.ids[svc]
	if !ok {
		return "", fmt.Errorf("framework: unknown service %q", svc)
	}
	return id, nil
}

func (c *Cluster) docker(ctx context.Context, verb, svc string, extra ...string) error {
	id, err := c.id(svc)
	if err != nil {
		return err
	}
	args := append(append([]string{verb}, extra...), id)
	_, err = run(ctx, nil, "docker", args...)
	return err
}

// Kill sends SIGKILL to the service's container.
func (c *Cluster) Kill(ctx context.Context, svc string) error { return c.docker(ctx, "kill", svc) }

// Stop stops the service's container gracefully (SIGTERM, then SIGKILL
// after 5 s).
func (c *Cluster) Stop(ctx context.Context, svc string) error {
	return c.docker(ctx, "stop", svc, "-t", "5")
}

// Start starts the service's stopped container again, with its file
// system (and so its local store) as it was.
func (c *Cluster) Start(ctx context.Context, svc string) error { return c.docker(ctx, "start", svc) }

// Disconnect takes the service's container off the cluster network.
func (c *Cluster) Disconnect(ctx context.Context, svc string) error {
	id, err := c.id(svc)
	if err != nil {
		return err
	}
	_, err = run(ctx, nil, "docker", "network", "disconnect", c.network, id)
	return err
}

// Connect puts the container back on the cluster network under its
// service name.
func (c *Cluster) Connect(ctx context.Context, svc string) error {
	id, err := c.id(svc)
	if err != nil {
		return err
	}
	_, err = run(ctx, nil, "docker", "network", "connect", "--alias", svc, c.network, id)
	return err
}

// Running reports whether the service's container runs.
func (c *Cluster) Running(ctx context.Context, svc string) (bool, error) {
	id, err := c.id(svc)
	if err != nil {
		return false, err
	}
	out, err := run(ctx, nil, "docker", "inspect", "--format", "{{.State.Running}}", id)
	return strings.TrimSpace(out) == "true", err
}

// Logs returns the service's container log (stdout and stderr).
func (c *Cluster) Logs(ctx context.Context, svc string) (string, error) {
	id, err := c.id(svc)
	if err != nil {
		return "", err
	}
	cmd := []string{"logs", id}
	out, err := runCombined(ctx, "docker", cmd...)
	return out, err
}

// ExtraURL returns the host URL of the HTTPS port of a container
// RunExtra started as a copy of svc.
func (c *Cluster) ExtraURL(ctx context.Context, svc, container string) (string, error) {
	return publishedURL(ctx, container, svc)
}

func portOf(svc string) string {
	if svc == Routerd {
		return routerdPort
	}
	return storagedPort
}

// URL returns the host URL of the service's HTTPS port (every port of
// the cluster speaks TLS: ask with HTTPClient or TLS). The engine picks
// a new host port when a container starts again, so ask after Start.
func (c *Cluster) URL(ctx context.Context, svc string) (string, error) {
	id, err := c.id(svc)
	if err != nil {
		return "", err
	}
	return publishedURL(ctx, id, svc)
}

// publishedURL returns the host URL of the HTTPS port of container, a
// copy of svc.
func publishedURL(ctx context.Context, container, svc string) (string, error) {
	out, err := run(ctx, nil, "docker", "port", container, portOf(svc)+"/tcp")
	if err != nil {
		return "", err
	}
	// One line per address family; take the IPv4 one.
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "127.0.0.1:") || strings.HasPrefix(line, "0.0.0.0:") {
			return "https://127.0.0.1:" + line[strings.LastIndex(line, ":")+1:], nil
		}
	}
	return "", fmt.Errorf("framework: no published port for %s: %q", container, out)
}

// Health is a node's /healthz: db -> version -> state (and reason).
type Health = nodetest.Health

// VersionHealth is one version's entry on /healthz.
type VersionHealth = wire.Health

// ErrUnhealthy is returned by GetHealth when /healthz answers, but not
// 200; the Health is still filled in.
var ErrUnhealthy = nodetest.ErrUnhealthy

// Node is the handle on the service's HTTP port. The engine picks a new
// host port when a container starts again, so ask after Start.
func (c *Cluster) Node(ctx context.Context, svc string) (*nodetest.Node, error) {
	base, err := c.URL(ctx, svc)
	if err != nil {
		return nil, err
	}
	return nodetest.NewClient(base, c.http), nil
}

// GetHealth reads the service's /healthz.
func (c *Cluster) GetHealth(ctx context.Context, svc string) (Health, error) {
	n, err := c.Node(ctx, svc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	h, err := n.Health(ctx)
	if err != nil {
		return h, fmt.Errorf("framework: %s: %w", svc, err)
	}
	return h, nil
}

// Metrics reads the service's /metrics text.
func (c *Cluster) Metrics(ctx context.Context, svc string) (string, error) {
	base, err := c.URL(ctx, svc)
	if err != nil {
		return "", err
	}
	return MetricsWith(ctx, c.http, base)
}

// MetricsWith reads the /metrics text of the daemon at base with client
// (one of another CA's certificates, say).
func MetricsWith(ctx context.Context, client *http.Client, base string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return "", fmt.Errorf("framework: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("framework: %s metrics: %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", fmt.Errorf("framework: %s metrics: %w", base, err)
	}
	return string(body), nil
}

// Unpublish removes a version from the source root.
func (c *Cluster) Unpublish(db, version string) error {
	if err := os.RemoveAll(filepath.Join(c.source, db, version)); err != nil {
		return fmt.Errorf("framework: %w", err)
	}
	return nil
}
