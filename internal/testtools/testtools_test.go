package testtools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeTB records the first fatal message and stops the helper like
// t.Fatal does, by unwinding with a panic that run recovers.
type fakeTB struct {
	testing.TB
	fatal string
}

type fatalPanic struct{}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = strings.TrimSpace(fmt.Sprintf(format, args...))
	panic(fatalPanic{})
}

func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%v", args...) }

// run calls fn with f and returns the path it returned, or "" after a fatal.
func (f *fakeTB) run(fn func(T) string) (path string) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fatalPanic); !ok {
				panic(r)
			}
		}
	}()
	return fn(f)
}

func TestTool(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "terraform")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)

	cases := map[string]struct {
		value     string
		want      string
		wantFatal string
	}{
		"absolute executable": {value: exe, want: exe},
		"bare name in PATH":   {value: "terraform", want: exe},
		"unset":               {value: "", wantFatal: "TERRAFORM is not set: run the tests through `make test`, or `export TERRAFORM=$(hack/install-tools.sh terraform)`"},
		"not in PATH":         {value: "tofu", wantFatal: `TERRAFORM="tofu" is not in PATH`},
		"relative path":       {value: "bin/terraform", wantFatal: `TERRAFORM="bin/terraform" must be an absolute path`},
		"missing file":        {value: filepath.Join(dir, "none"), wantFatal: "no such file or directory"},
		"not executable":      {value: plain, wantFatal: "is not an executable file"},
		"directory":           {value: dir, wantFatal: "is not an executable file"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("TERRAFORM", tc.value)
			f := &fakeTB{TB: t}
			got := f.run(Terraform)
			if got != tc.want {
				t.Errorf("Terraform() = %q, want %q", got, tc.want)
			}
			if !strings.Contains(f.fatal, tc.wantFatal) || (tc.wantFatal == "") != (f.fatal == "") {
				t.Errorf("fatal message %q, want one containing %q", f.fatal, tc.wantFatal)
			}
			if tc.wantFatal != "" && !strings.Contains(f.fatal, "hack/install-tools.sh terraform") {
				t.Errorf("fatal message %q does not say how to get terraform", f.fatal)
			}
		})
	}

	t.Run("kubectl", func(t *testing.T) {
		t.Setenv("KUBECTL", "")
		f := &fakeTB{TB: t}
		f.run(Kubectl)
		if !strings.Contains(f.fatal, "KUBECTL is not set") || !strings.Contains(f.fatal, "hack/install-tools.sh kubectl") {
			t.Errorf("fatal message %q", f.fatal)
		}
	})
}

func TestTerraformEnv(t *testing.T) {
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_HTTP_PASSWORD", "leaked")
	t.Setenv("TF_CLI_CONFIG_FILE", "/etc/outside.tfrc")
	dir := t.TempDir()

	env := map[string]string{}
	for _, kv := range TerraformEnv(t, dir) {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := env[k]; dup {
			t.Errorf("%s set twice", k)
		}
		env[k] = v
	}
	for _, k := range []string{"TF_LOG", "TF_HTTP_PASSWORD"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s inherited from the test process", k)
		}
	}
	for k, want := range map[string]string{
		"HOME":               filepath.Join(dir, ".home"),
		"TF_CLI_CONFIG_FILE": filepath.Join(dir, ".home", ".terraformrc"),
		"TF_DATA_DIR":        filepath.Join(dir, ".terraform"),
		"TF_IN_AUTOMATION":   "1",
		"CHECKPOINT_DISABLE": "1",
		"PATH":               os.Getenv("PATH"),
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	if info, err := os.Stat(env["TF_CLI_CONFIG_FILE"]); err != nil || info.Size() != 0 {
		t.Errorf("CLI configuration file: %v, want an empty file", err)
	}
}

func TestAllocatedBy(t *testing.T) {
	var sink []byte
	got := AllocatedBy(func() { sink = make([]byte, 1<<20) })
	if got < 1<<20 || got > 2<<20 {
		t.Errorf("AllocatedBy(1 MiB) = %d, want about 1 MiB", got)
	}
	_ = sink
}

func TestHelmTemplateArgs(t *testing.T) {
	cases := map[string]struct {
		set  []string
		want []string
	}{
		"no values": {
			want: []string{"template", "r", "charts/x", "--namespace", "ops"},
		},
		"values in order": {
			set:  []string{"a=1", "b={x,y}"},
			want: []string{"template", "r", "charts/x", "--namespace", "ops", "--set", "a=1", "--set", "b={x,y}"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, HelmTemplateArgs("r", "charts/x", "ops", tc.set...)); diff != "" {
				t.Errorf("HelmTemplateArgs (-want +got):\n%s", diff)
			}
		})
	}
}
