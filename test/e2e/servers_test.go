package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// stateServerKind is a kind of state server of docs/servers.md, as the
// reference server's flags make it, with the Ready reason of a StateLock
// that holds its lock there.
type stateServerKind struct {
	name string
	mode []string
	// gitlab serves GitLab's routes: the backend locks at <address>/lock
	// with POST and DELETE, as a GitLab user with a token.
	gitlab     bool
	heldReason string
}

var stateServerKinds = []stateServerKind{
	{name: "a server whose conflicts name no holder", mode: []string{"--conflict", "text-409"}, heldReason: backendsv1alpha1.HolderNotReportedReason},
	{name: "a server whose UNLOCK ignores its body and whose conflicts name no holder", mode: []string{"--conflict", "text-409", "--unlock", "ignores-body"},
		heldReason: backendsv1alpha1.HolderNotReportedReason},
	{name: "a server that releases only on the exact LockInfo", mode: []string{"--unlock", "exact-body"}, heldReason: backendsv1alpha1.LockAcquiredReason},
	{name: "a plain-text server that takes no force unlock", mode: []string{"--conflict", "text-423", "--unlock-bodies", "none"},
		heldReason: backendsv1alpha1.HolderNotReportedReason},
	{name: "GitLab", gitlab: true, mode: []string{"--gitlab"}, heldReason: backendsv1alpha1.LockAcquiredReason},
}

var _ = Describe("A StateLock on each kind of state server", func() {
	for _, kind := range stateServerKinds {
		It("holds terraform apply on "+kind.name+", and lets -lock-timeout go on once it is deleted", func(ctx SpecContext) {
			ns := newNamespace(ctx, "servers")
			opts := stateServerOptions{dataDir: filepath.Join(GinkgoT().TempDir(), "states"), mode: kind.mode}
			if kind.gitlab {
				opts.username, opts.password = gitlabDocUser, gitlabDocToken
			}
			server := startStateServer(opts)
			DeferCleanup(server.stop)
			mgr := startManager(ns)
			DeferCleanup(mgr.stop)

			name := "frozen"
			if kind.gitlab {
				// The manifest docs/servers.md gives for GitLab, on the
				// emulation's address.
				name = "network"
				kc.apply(ctx, ns, gitlabManifest(server.url))
			} else {
				kc.apply(ctx, ns, manifestOf(makeBackend(name, server.stateURL(name)).Locks().Obj()))
			}
			kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/"+name, "--timeout=60s")

			By("writing a state with Terraform")
			tf := newRunner(ctx, GinkgoT().TempDir(), ns, name+"-backend", name+"-backend-credentials")
			tf.init(ctx)
			tf.apply(ctx)

			By("opening a change freeze, once the backend has learned its server")
			kc.apply(ctx, ns, manifestOf(freezeOf(name)))
			kc.must(ctx, ns, "wait", "--for=condition=Ready", "statelock/release-freeze", "--timeout=60s")
			id := kc.jsonpath(ctx, ns, "statelock/release-freeze", "{.status.lockID}")
			Expect(id).NotTo(BeEmpty())
			Expect(kc.jsonpath(ctx, ns, "httpbackend/"+name, "{.status.server.checkedAt}")).NotTo(BeEmpty())
			// A StateLock is checked at every probe of its backend: it
			// never reads a lock it holds as lost.
			Eventually(func() string {
				return kc.jsonpath(ctx, ns, "statelock/release-freeze", `{.status.conditions[?(@.type=="Ready")].reason}`)
			}, 30*time.Second, time.Second).Should(Equal(kind.heldReason))

			By("terraform apply meeting the StateLock's lock")
			out, err := tf.run(ctx, "apply", "-auto-approve", "-input=false", "-lock-timeout=2s", "-var=nat_gateway_count=5")
			Expect(err).To(HaveOccurred())
			Expect(out).To(ContainSubstring("Error acquiring the state lock"))
			Consistently(func() string {
				return kc.jsonpath(ctx, ns, "statelock/release-freeze", `{.status.conditions[?(@.type=="Ready")].status}`)
			}, 12*time.Second, 2*time.Second).Should(Equal("True"), "never LockLost while it holds the lock")

			By("terraform apply -lock-timeout=60s waiting while the StateLock is deleted")
			expectApplyWaitsUntilDeleted(ctx, tf, ns, "release-freeze", id)
		})
	}
})

// The GitLab user and token of the manifest docs/servers.md gives.
const (
	gitlabDocUser  = "my-user"
	gitlabDocToken = "glpat-replace-me"
)

// yamlBlock matches a fenced YAML block of a Markdown document.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// gitlabManifest is the manifest of docs/servers.md's GitLab section, with
// the emulation at url in place of its GitLab host.
func gitlabManifest(url string) string {
	GinkgoHelper()
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "servers.md"))
	Expect(err).NotTo(HaveOccurred())
	_, section, found := strings.Cut(string(doc), "## GitLab's managed Terraform state")
	Expect(found).To(BeTrue(), "docs/servers.md has a GitLab section")
	block := yamlBlock.FindStringSubmatch(section)
	Expect(block).NotTo(BeNil(), "the GitLab section has a manifest")
	manifest := block[1]
	Expect(manifest).To(ContainSubstring("https://gitlab.example.com"))
	Expect(manifest).To(ContainSubstring(gitlabDocToken))
	Expect(manifest).To(ContainSubstring("username: " + gitlabDocUser))
	return strings.ReplaceAll(manifest, "https://gitlab.example.com", url)
}
