package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// changedLines returns the lines only in before, prefixed with "-", and
// those only in after, prefixed with "+".
func changedLines(before, after []string) []string {
	var changed []string
	for _, line := range before {
		if !slices.Contains(after, line) {
			changed = append(changed, "- "+line)
		}
	}
	for _, line := range after {
		if !slices.Contains(before, line) {
			changed = append(changed, "+ "+line)
		}
	}
	return changed
}

// expectAddressFree fails, saying why, when host:port is taken.
func expectAddressFree(ctx context.Context, address, why string) {
	l, err := new(net.ListenConfig).Listen(ctx, "tcp", address)
	if err != nil {
		Fail(fmt.Sprintf("%s is in use (%v); it is %s", address, err, why))
	}
	Expect(l.Close()).To(Succeed())
}

// listening says whether something accepts connections on address.
func listening(ctx context.Context, address string) bool {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// demoEnv is the environment of the demo script: PATH, a HOME of its own,
// the Go settings of this run (its build cache and module cache, so that
// the script's go build reuses them), KUBEBUILDER_ASSETS, and the suite's
// egress recorder as proxy, so that any request beyond loopback fails the
// suite.
func demoEnv(ctx context.Context, home string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GO") || strings.HasPrefix(kv, "CGO_") || strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	goBin, err := exec.LookPath("go")
	Expect(err).NotTo(HaveOccurred())
	out, err := exec.CommandContext(ctx, goBin, "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV").Output()
	Expect(err).NotTo(HaveOccurred())
	var goEnv map[string]string
	Expect(json.Unmarshal(out, &goEnv)).To(Succeed())
	for k, v := range goEnv {
		env = append(env, k+"="+v)
	}
	assets, err := filepath.Abs(os.Getenv("KUBEBUILDER_ASSETS"))
	Expect(err).NotTo(HaveOccurred())
	env = append(env, "KUBEBUILDER_ASSETS="+assets)
	return append(env, egress.env()...)
}

// interruptDemo stops a demo a failed spec left running: Ctrl-C, then
// SIGKILL to its process group when it has not stopped within a minute,
// and to every process it started that outlived it.
func interruptDemo(demo *process) {
	select {
	case <-demo.exited:
		return
	default:
	}
	started := descendants(demo.cmd.Process.Pid)
	_ = syscall.Kill(-demo.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-demo.exited:
	case <-time.After(time.Minute):
		_ = syscall.Kill(-demo.cmd.Process.Pid, syscall.SIGKILL)
		<-demo.exited
	}
	killLeftovers(started)
}

// killLeftovers kills those of the processes that still run, so that a
// failed spec leaves nothing behind.
func killLeftovers(processes []descendant) {
	for _, p := range processes {
		if p.running() {
			GinkgoWriter.Printf("killing %s (pid %d), which the demo left running\n", p.name, p.pid)
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// clusterObjects lists, with k, what the demo would have created or
// changed in a cluster it used: the CRDs, the cluster RBAC, the objects of
// every infrastate kind, and the Secrets, ConfigMaps and ServiceAccounts
// of the namespace default; each as "Kind namespace/name resourceVersion",
// sorted.
func clusterObjects(ctx context.Context, k *kubectl) []string {
	const each = `jsonpath={range .items[*]}{.kind} {.metadata.namespace}/{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}`
	out := k.must(ctx, "", "get", "customresourcedefinitions,clusterroles,clusterrolebindings,httpbackends,cosbackends,remotestates,statelocks",
		"--all-namespaces", "-o", each)
	out += k.must(ctx, "default", "get", "secrets,configmaps,serviceaccounts", "-o", each)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	slices.Sort(lines)
	return lines
}

// kubectlTables reads what kubectl get prints for one kind or several
// (one table each, separated by blank lines) into rows by NAME, each a map
// from column header to cell. Cells are cut at the positions of the
// headers, so an empty cell reads as "" and new columns change nothing.
func kubectlTables(out string) map[string]map[string]string {
	column := regexp.MustCompile(`\S+(?: \S+)*`)
	rows := map[string]map[string]string{}
	var headers []string
	var starts []int
	for line := range strings.SplitSeq(out, "\n") {
		if strings.TrimSpace(line) == "" {
			headers = nil
			continue
		}
		if headers == nil {
			starts = starts[:0]
			for _, loc := range column.FindAllStringIndex(line, -1) {
				headers = append(headers, line[loc[0]:loc[1]])
				starts = append(starts, loc[0])
			}
			continue
		}
		row := map[string]string{}
		for i, start := range starts {
			end := len(line)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(line))
			}
			if start < end {
				row[headers[i]] = strings.TrimSpace(line[start:end])
			} else {
				row[headers[i]] = ""
			}
		}
		rows[row["NAME"]] = row
	}
	return rows
}

// haveEntries succeeds for a map holding every entry of want.
func haveEntries(want map[string]string) OmegaMatcher {
	var matchers []OmegaMatcher
	for k, v := range want {
		matchers = append(matchers, HaveKeyWithValue(k, v))
	}
	return And(matchers...)
}

// keysOf returns the keys of m.
func keysOf(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// keyBody is the base64 body of a PEM private key, without its armour:
// what would show if the key leaked in a log, whatever the line breaks.
func keyBody(pem []byte) string {
	var body strings.Builder
	for line := range strings.Lines(string(pem)) {
		if !strings.HasPrefix(line, "-----") {
			body.WriteString(strings.TrimSpace(line))
		}
	}
	s := body.String()
	Expect(len(s)).To(BeNumerically(">", 64))
	return s[:64]
}
