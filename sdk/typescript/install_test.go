package typescript_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The README's install line works from a fresh checkout: the package is
// copied without its node_modules (as a checkout has it before npm ci),
// installed into an empty project with the README's command, and imported
// there.
func TestReadme_InstallLineWorksFromAFreshCheckout(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the TypeScript SDK's tests need it")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the README's install line needs it")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^npm install .*/path/to/baton/sdk/typescript$`).FindString(string(readme))
	if line == "" {
		t.Fatal("the README has no install line for /path/to/baton/sdk/typescript")
	}
	checkout := filepath.Join(t.TempDir(), "baton")
	copyPackage(t, ".", filepath.Join(checkout, "sdk", "typescript"))
	args := strings.Fields(strings.ReplaceAll(line, "/path/to/baton", checkout))[1:]
	args = append(args, "--prefer-offline", "--no-audit", "--no-fund")

	project := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	initProject := exec.CommandContext(ctx, npm, "init", "-y")
	initProject.Dir = project
	if out, err := initProject.CombinedOutput(); err != nil {
		t.Fatalf("npm init: %v\n%s", err, out)
	}
	install := exec.CommandContext(ctx, npm, args...)
	install.Dir = project
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	use := exec.CommandContext(ctx, node, "--input-type=module", "-e",
		`import * as baton from "@batonhq/agent"; if (typeof baton.verifySignature !== "function") throw new Error("no verifySignature"); console.log("ok")`)
	use.Dir = project
	out, err := use.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("importing the package installed by %q: %v\n%s", line, err, out)
	}
}

// copyPackage copies the package's files, as a checkout has them, from src
// to dst: no node_modules.
func copyPackage(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
