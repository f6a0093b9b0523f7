package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// run runs a command and returns its standard output; a failure carries
// its standard error.
func run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("framework: %s %s: %w: %s", name, strings.Join(args, " "),
			err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// composeCommand returns the compose command this machine has: the
// docker CLI plugin or docker-compose v1.
func composeCommand(ctx context.Context) ([]string, error) {
	if _, err := run(ctx, nil, "docker", "compose", "version"); err == nil {
		return []string{"docker", "compose"}, nil
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}, nil
	}
	return nil, fmt.Errorf("framework: neither `docker compose` nor docker-compose found; run scripts/e2e-deps.sh")
}

// imageExists reports whether the local engine holds the image.
func imageExists(ctx context.Context, image string) bool {
	_, err := run(ctx, nil, "docker", "image", "inspect", "--format", "{{.Id}}", image)
	return err == nil
}

// runCombined runs a command and returns its standard output and error
// interleaved (docker logs writes the container's stderr to its own).
func runCombined(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("framework: %s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}
