package e2e

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// permissionsFile is the checked-in list of the manager's effective
// permissions.
var permissionsFile = filepath.Join("testdata", "manager-permissions.txt")

// The manager's effective permissions, as the API server answers
// `kubectl auth can-i --list` for its ServiceAccount's token, less what
// every ServiceAccount gets without a binding, must be exactly
// testdata/manager-permissions.txt: a new verb, resource or namespace the
// manager may touch is a decision made visibly, in that file's diff. When
// the shipped RBAC changes on purpose (a +kubebuilder:rbac marker or a
// file of config/rbac), regenerate the file and commit it with the change:
//
//	UPDATE_PERMISSIONS=1 go test -count=1 ./test/e2e/ -ginkgo.focus "effective permissions"
var _ = Describe("The manager's effective permissions", func() {
	It("are exactly testdata/manager-permissions.txt, in a watched namespace and in its own", func(ctx SpecContext) {
		watched := newNamespace(ctx, "permissions")
		manager := kc.as(managerKubeconfig)

		By("asking, for a ServiceAccount with no binding, what every ServiceAccount may do")
		elsewhere := newNamespace(ctx, "unbound")
		kc.must(ctx, elsewhere, "create", "serviceaccount", "unbound")
		unbound := kc.as(serviceAccountKubeconfig(ctx, elsewhere, "unbound", filepath.Join(GinkgoT().TempDir(), "unbound.kubeconfig")))

		got := "# The manager's effective permissions: `kubectl auth can-i --list` as its\n" +
			"# ServiceAccount, less what a ServiceAccount with no binding may do.\n" +
			"# Regenerate with UPDATE_PERMISSIONS=1 (see test/e2e/permissions_test.go).\n"
		for _, where := range []struct{ title, namespace string }{
			{"in a namespace it watches", watched},
			{"in its own namespace, " + deployNamespace, deployNamespace},
		} {
			own := permissions(ctx, manager, where.namespace)
			for key, verbs := range permissions(ctx, unbound, where.namespace) {
				own[key] = slices.DeleteFunc(own[key], func(v string) bool { return slices.Contains(verbs, v) })
			}
			got += "\n[" + where.title + "]\n"
			for _, key := range slices.Sorted(maps.Keys(own)) {
				if len(own[key]) > 0 {
					got += key + ": " + strings.Join(own[key], " ") + "\n"
				}
			}
		}

		if os.Getenv("UPDATE_PERMISSIONS") != "" {
			Expect(os.WriteFile(permissionsFile, []byte(got), 0o600)).To(Succeed())
		}
		want, err := os.ReadFile(permissionsFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n"))).To(BeEmpty(),
			"The manager's effective permissions (+) differ from %s (-). If the new ones are a deliberate decision, regenerate the file with\n"+
				"  UPDATE_PERMISSIONS=1 go test -count=1 ./test/e2e/ -ginkgo.focus \"effective permissions\"\n"+
				"and commit it with the RBAC change; if not, fix the +kubebuilder:rbac markers or config/rbac.", permissionsFile)
	})
})

// permissions runs `kubectl auth can-i --list` in namespace with k's
// credentials and returns the sorted verbs allowed on each resource, keyed
// "resource" (resource.group outside the core group), "resource[names]"
// when limited to some names, or the non-resource URL.
func permissions(ctx context.Context, k *kubectl, namespace string) map[string][]string {
	out := k.must(ctx, namespace, "auth", "can-i", "--list")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	// The columns are aligned: cut each row where its header's titles start.
	cols := []int{0}
	for _, title := range []string{"Non-Resource URLs", "Resource Names", "Verbs"} {
		i := strings.Index(header, title)
		ExpectWithOffset(1, i).To(BeNumerically(">", cols[len(cols)-1]), "no column %q in %q", title, header)
		cols = append(cols, i)
	}
	got := map[string][]string{}
	for _, line := range lines[1:] {
		line += strings.Repeat(" ", max(0, cols[3]-len(line)))
		resource := strings.TrimSpace(line[cols[0]:cols[1]])
		urls := strings.Trim(strings.TrimSpace(line[cols[1]:cols[2]]), "[]")
		names := strings.Trim(strings.TrimSpace(line[cols[2]:cols[3]]), "[]")
		verbs := strings.Fields(strings.Trim(strings.TrimSpace(line[cols[3]:]), "[]"))
		key := resource
		if resource == "" {
			key = urls
		}
		ExpectWithOffset(1, key).NotTo(BeEmpty(), "a row with neither a resource nor a URL: %q", line)
		if names != "" {
			key += "[" + names + "]"
		}
		got[key] = append(got[key], verbs...)
	}
	for key, verbs := range got {
		slices.Sort(verbs)
		got[key] = slices.Compact(verbs)
	}
	return got
}
