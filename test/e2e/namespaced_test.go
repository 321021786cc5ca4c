package e2e

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// namespacedPermissionsFile is the checked-in list of the manager's
// effective permissions in namespaced mode.
var namespacedPermissionsFile = filepath.Join("testdata", "manager-permissions-namespaced.txt")

// watchNamespacesFlag is the manager flag that restricts it to some
// namespaces.
const watchNamespacesFlag = "--watch-namespaces="

// config/namespaced runs the manager with --watch-namespaces and Roles in
// the namespaces it names only. Its specs use those namespaces, of fixed
// names, and the manager's own: they run one at a time.
var _ = Describe("config/namespaced", Ordered, Serial, func() {
	var (
		// shipped is config/namespaced as `kubectl kustomize` renders it.
		shipped []*unstructured.Unstructured
		// watched are the namespaces its manager watches.
		watched []string
		// elsewhere is a namespace it does not watch.
		elsewhere string
		// overlay runs with the RBAC of config/namespaced, chart with that
		// of the chart with the same watchNamespaces.
		overlay, chart managerIdentity
	)

	BeforeAll(func(ctx SpecContext) {
		shipped = kustomize(ctx, filepath.Join(testenv.RepoRoot(), "config", "namespaced"))
		deployment := convert[appsv1.Deployment](findKind(shipped, "Deployment", "backend-operator-controller-manager"))
		for _, arg := range deployment.Spec.Template.Spec.Containers[0].Args {
			if value, ok := strings.CutPrefix(arg, watchNamespacesFlag); ok {
				Expect(watched).To(BeEmpty(), "%s is given twice", watchNamespacesFlag)
				watched = strings.Split(value, ",")
			}
		}
		Expect(watched).To(HaveLen(2), "the manager of config/namespaced should watch two namespaces")
		for _, ns := range watched {
			kc.must(ctx, "", "create", "namespace", ns)
		}
		elsewhere = newNamespace(ctx, "elsewhere")

		// The same objects under other names (test/e2e/testdata/namespaced
		// adds a suffix with kustomize), so that their ServiceAccount has
		// none of the bindings of the suite's.
		dir := GinkgoT().TempDir()
		overlay = setUpManagerIdentity(ctx, dir, "config/namespaced", kustomize(ctx, filepath.Join("testdata", "namespaced")))
		chart = setUpManagerIdentity(ctx, dir, "the chart with watchNamespaces", helmTemplate(ctx, "namespaced", deployNamespace,
			"watchNamespaces={"+strings.Join(watched, ",")+"}"))
	})

	It("is config/default with the manager's ClusterRole replaced by Roles in the namespaces it watches", func(ctx SpecContext) {
		cluster := kustomize(ctx, filepath.Join(testenv.RepoRoot(), "config", "default"))
		clusterRole := convert[rbacv1.ClusterRole](findKind(cluster, "ClusterRole", "backend-operator-manager-role"))

		By("a Role with the ClusterRole's rules in each watched namespace, bound to the manager")
		var roleNamespaces []string
		for _, o := range shipped {
			switch o.GetKind() {
			case "Role":
				if o.GetNamespace() == deployNamespace {
					continue
				}
				role := convert[rbacv1.Role](o)
				Expect(role.Name).To(Equal("backend-operator-manager-role"))
				Expect(grants(role.Rules)).To(Equal(grants(clusterRole.Rules)), "the Role in %s", role.Namespace)
				roleNamespaces = append(roleNamespaces, role.Namespace)
			case "RoleBinding":
				if o.GetNamespace() == deployNamespace {
					continue
				}
				binding := convert[rbacv1.RoleBinding](o)
				Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "backend-operator-manager-role"}))
				Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: managerServiceAccountName, Namespace: deployNamespace}}))
			}
		}
		Expect(roleNamespaces).To(ConsistOf(watched), "one Role in each namespace of %s", watchNamespacesFlag)

		By("nothing cluster-wide but what its metrics endpoint needs to authenticate scrapes")
		for _, o := range shipped {
			if o.GetKind() != "ClusterRoleBinding" {
				continue
			}
			binding := convert[rbacv1.ClusterRoleBinding](o)
			Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: managerServiceAccountName, Namespace: deployNamespace}))
			role := convert[rbacv1.ClusterRole](findKind(shipped, "ClusterRole", binding.RoleRef.Name))
			Expect(grants(role.Rules)).To(Equal(map[string][]string{
				"tokenreviews.authentication.k8s.io":        {"create"},
				"subjectaccessreviews.authorization.k8s.io": {"create"},
			}), "ClusterRole %s", role.Name)
		}

		By("every other object as config/default has it")
		isManagerRBAC := func(o *unstructured.Unstructured) bool {
			return (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") && o.GetNamespace() != deployNamespace ||
				o.GetName() == "backend-operator-manager-role" || o.GetName() == "backend-operator-manager-rolebinding"
		}
		withoutManagerRBAC := func(objs []*unstructured.Unstructured) []string {
			var out []string
			for _, o := range objs {
				if isManagerRBAC(o) {
					continue
				}
				if o.GetKind() == "Deployment" {
					o = o.DeepCopy()
					containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					Expect(err).NotTo(HaveOccurred())
					manager := containers[0].(map[string]any)
					manager["args"] = slices.DeleteFunc(slices.Clone(manager["args"].([]any)), func(a any) bool {
						return strings.HasPrefix(a.(string), watchNamespacesFlag)
					})
					Expect(unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")).To(Succeed())
				}
				data, err := o.MarshalJSON()
				Expect(err).NotTo(HaveOccurred())
				out = append(out, string(data))
			}
			return out
		}
		Expect(withoutManagerRBAC(shipped)).To(Equal(withoutManagerRBAC(cluster)))
	})

	It("is deployed by make deploy DEPLOY_CONFIG=config/namespaced", func(ctx SpecContext) {
		const image = "example.test/backend-operator:v1.2.3-namespaced"
		r := makeDeploy(ctx, "DEPLOY_CONFIG=config/namespaced", "IMG="+image)
		Expect(r.err).NotTo(HaveOccurred(), "make deploy DEPLOY_CONFIG=config/namespaced:\n%s", r.stderr)
		Expect(managerImages(ctx)).To(Equal([]string{image}))
		Expect(kc.jsonpath(ctx, deployNamespace, "deployment/backend-operator-controller-manager", "{.spec.template.spec.containers[0].args}")).
			To(ContainSubstring(watchNamespacesFlag + strings.Join(watched, ",")))
		for _, ns := range watched {
			Expect(kc.jsonpath(ctx, ns, "rolebinding/backend-operator-manager-rolebinding", "{.roleRef.kind}/{.roleRef.name}")).
				To(Equal("Role/backend-operator-manager-role"))
		}
	})

	It("has exactly the permissions of testdata/manager-permissions-namespaced.txt, with the overlay's RBAC and the chart's", func(ctx SpecContext) {
		expectPermissionsFile(ctx, namespacedPermissionsFile, []permissionSection{
			{"in a namespace it watches, " + watched[0], watched[0]},
			{"in the other namespace it watches, " + watched[1], watched[1]},
			{"in a namespace it does not watch", elsewhere},
			{"in its own namespace, " + deployNamespace, deployNamespace},
		}, overlay, chart)
	})

	It("renders, probes and publishes in the namespaces it watches, and leaves the others alone", func(ctx SpecContext) {
		By("a backend in a namespace it does not watch, created first")
		createStateServerSecrets(ctx, elsewhere, statePassword)
		kc.apply(ctx, elsewhere, manifestOf(suiteBackend("ignored", elsewhere+"-ignored").Obj()))

		mgr := startManagerAs(overlay, strings.Join(watched, ","), nil)
		DeferCleanup(mgr.stop)

		By("a backend that renders and probes, and a RemoteState that publishes, in each watched namespace")
		dir := GinkgoT().TempDir()
		for _, ns := range watched {
			createStateServerSecrets(ctx, ns, statePassword)
			kc.apply(ctx, ns, manifestOf(suiteBackend("network", ns+"-network").Obj(),
				builders.MakeRemoteState("network", "", backendsv1alpha1.HttpBackendKind, "network").ProbeInterval(10*time.Second).Obj()))
			kc.must(ctx, ns, "wait", "--for=condition=Ready", "httpbackend/network", "--timeout=60s")
			Expect(kc.configMapData(ctx, ns, "network-backend")).To(HaveKey("backend.tf"))

			tf := newRunner(ctx, dir, ns, "network-backend", "network-backend-credentials")
			tf.init(ctx)
			tf.apply(ctx)
			serial := tf.serial(ctx)
			Eventually(func(g Gomega) {
				g.Expect(kc.jsonpath(ctx, ns, "httpbackend/network", "{.status.state.serial}")).To(Equal(strconv.FormatInt(serial, 10)))
				g.Expect(kc.jsonpath(ctx, ns, "remotestate/network", "{.status.state.serial}")).To(Equal(strconv.FormatInt(serial, 10)))
			}).WithTimeout(probeTimeout).Should(Succeed())
			kc.must(ctx, ns, "wait", "--for=condition=Ready", "remotestate/network", "--timeout=60s")
			Expect(kc.configMapData(ctx, ns, "network-outputs")).To(HaveKeyWithValue("vpc_id", "vpc-0a1b2c3d4e5f"))
			Expect(kc.secretData(ctx, ns, "network-outputs")).To(HaveKey("db_password"))
		}

		By("the backend elsewhere still has no status, and nothing was rendered for it")
		Expect(kc.jsonpath(ctx, elsewhere, "httpbackend/ignored", "{.status.conditions}")).To(BeEmpty())
		Expect(kc.jsonpath(ctx, elsewhere, "httpbackend/ignored", "{.status.observedGeneration}")).To(Equal("-1"), "the default, which the manager never wrote over")
		Expect(kc.run(ctx, elsewhere, "", "get", "configmap", "ignored-backend").err).To(HaveOccurred())
		// expectNeverForbidden, when the manager stops, proves it never
		// even asked for the objects of a namespace it does not watch.
	})

	It("cannot read a Secret in any namespace it does not watch", func(ctx SpecContext) {
		kc.must(ctx, deployNamespace, "create", "secret", "generic", "operator-own", "--from-literal=key=value")
		for _, id := range []managerIdentity{overlay, chart} {
			as := kc.as(id.kubeconfig)
			for _, attempt := range []struct {
				namespace string
				args      []string
			}{
				{elsewhere, []string{"get", "secret", "demo-state-password"}},
				{elsewhere, []string{"get", "secrets"}},
				{deployNamespace, []string{"get", "secret", "operator-own"}},
				{"", []string{"get", "secrets", "--all-namespaces"}},
			} {
				r := as.run(ctx, attempt.namespace, "", attempt.args...)
				Expect(r.err).To(HaveOccurred(), "with the RBAC of %s, kubectl %s in %q succeeded:\n%s", id.source, strings.Join(attempt.args, " "), attempt.namespace, r.stdout)
				Expect(r.stderr).To(ContainSubstring("Forbidden"), "with the RBAC of %s, kubectl %s in %q", id.source, strings.Join(attempt.args, " "), attempt.namespace)
			}
			By("while it reads those of the namespaces it watches, with the RBAC of " + id.source)
			Expect(as.must(ctx, watched[0], "get", "secret", "demo-state-password", "-o", "name")).To(Equal("secret/demo-state-password\n"))
		}
	})
})

// findKind returns the object of kind called name.
func findKind(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	Fail("no " + kind + " called " + name)
	return nil
}
