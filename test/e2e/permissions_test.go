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
// permissions when it watches every namespace.
var permissionsFile = filepath.Join("testdata", "manager-permissions.txt")

// updatePermissionsHint says how to regenerate the permission files.
const updatePermissionsHint = `UPDATE_PERMISSIONS=1 go test -count=1 ./test/e2e/ -ginkgo.focus "effective permissions"`

// The manager's effective permissions, as the API server answers
// `kubectl auth can-i --list` for its ServiceAccount's token, less what
// every ServiceAccount gets without a binding, must be exactly
// testdata/manager-permissions.txt, with the RBAC of the chart and with
// that of config/default: a new verb, resource or namespace the manager
// may touch is a decision made visibly, in that file's diff, and the two
// installs grant the same. When the shipped RBAC changes on purpose (a
// +kubebuilder:rbac marker, a file of config/rbac or of the chart),
// regenerate the file and commit it with the change:
//
//	UPDATE_PERMISSIONS=1 go test -count=1 ./test/e2e/ -ginkgo.focus "effective permissions"
var _ = Describe("The manager's effective permissions", func() {
	It("are exactly testdata/manager-permissions.txt, in a watched namespace and in its own, with the chart's RBAC and config/default's", func(ctx SpecContext) {
		sections := []permissionSection{
			{"in a namespace it watches", newNamespace(ctx, "permissions")},
			{"in its own namespace, " + deployNamespace, deployNamespace},
		}
		expectPermissionsFile(ctx, permissionsFile, sections, managerID, otherManagerID)
	})
})

// permissionSection is a namespace the effective permissions are listed
// in, with the title the file gives it.
type permissionSection struct{ title, namespace string }

// unboundServiceAccount returns kubectl as a new ServiceAccount with no
// binding: what it may do, every ServiceAccount may.
func unboundServiceAccount(ctx context.Context) *kubectl {
	ns := newNamespace(ctx, "unbound")
	kc.must(ctx, ns, "create", "serviceaccount", "unbound")
	return kc.as(serviceAccountKubeconfig(ctx, ns, "unbound", filepath.Join(GinkgoT().TempDir(), "unbound.kubeconfig")))
}

// effectivePermissions lists, section by section, what id may do less
// what unbound may, in the format of the checked-in permission files.
func effectivePermissions(ctx context.Context, id managerIdentity, unbound *kubectl, sections []permissionSection) string {
	got := "# The manager's effective permissions: `kubectl auth can-i --list` as its\n" +
		"# ServiceAccount, less what a ServiceAccount with no binding may do.\n" +
		"# Regenerate with UPDATE_PERMISSIONS=1 (see test/e2e/permissions_test.go).\n"
	manager := kc.as(id.kubeconfig)
	for _, section := range sections {
		own := permissions(ctx, manager, section.namespace)
		for key, verbs := range permissions(ctx, unbound, section.namespace) {
			own[key] = slices.DeleteFunc(own[key], func(v string) bool { return slices.Contains(verbs, v) })
		}
		got += "\n[" + section.title + "]\n"
		for _, key := range slices.Sorted(maps.Keys(own)) {
			if len(own[key]) > 0 {
				got += key + ": " + strings.Join(own[key], " ") + "\n"
			}
		}
	}
	return got
}

// expectPermissionsFile fails unless the effective permissions of each of
// ids, listed in sections, are the content of file. With
// UPDATE_PERMISSIONS set it first writes those of the first identity to
// file.
func expectPermissionsFile(ctx context.Context, file string, sections []permissionSection, ids ...managerIdentity) {
	GinkgoHelper()
	unbound := unboundServiceAccount(ctx)
	for i, id := range ids {
		By("listing the manager's effective permissions with the RBAC of " + id.source)
		got := effectivePermissions(ctx, id, unbound, sections)
		if i == 0 && os.Getenv("UPDATE_PERMISSIONS") != "" {
			Expect(os.WriteFile(file, []byte(got), 0o600)).To(Succeed())
		}
		want, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		Expect(cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n"))).To(BeEmpty(),
			"The effective permissions (+) of the manager with the RBAC of %s differ from %s (-). If the new ones are a deliberate decision, regenerate the file with\n"+
				"  %s\n"+
				"and commit it with the RBAC change; if not, fix the +kubebuilder:rbac markers, config/ or the chart.", id.source, file, updatePermissionsHint)
	}
}

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
