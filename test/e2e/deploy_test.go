package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/infrastate/backend-operator/internal/testenv"
)

// deployNamespace is where config/default deploys the manager.
const deployNamespace = "backend-operator-system"

// managerServiceAccountName is the ServiceAccount config/default runs the
// manager as, in deployNamespace.
const managerServiceAccountName = "backend-operator-controller-manager"

// managerServiceAccount is the user the deployed manager runs as.
const managerServiceAccount = "system:serviceaccount:" + deployNamespace + ":" + managerServiceAccountName

// The specs of config/default apply it to the suite's one API server, in
// namespaces of fixed names: they run one at a time.
var _ = Describe("config/default", Serial, func() {
	It("renders with kubectl kustomize and applies cleanly", func(ctx SpecContext) {
		root := testenv.RepoRoot()
		rendered := kustomizeYAML(ctx, filepath.Join(root, "config", "default"))
		objs := decodeDocuments([]byte(rendered))
		byKind := map[string][]*unstructured.Unstructured{}
		for _, o := range objs {
			byKind[o.GetKind()] = append(byKind[o.GetKind()], o)
			if o.GetKind() != "Namespace" && o.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(o.GetKind(), "Cluster") {
				Expect(o.GetNamespace()).To(Equal(deployNamespace), "%s %s", o.GetKind(), o.GetName())
			}
		}

		By("every generated CRD is deployed")
		bases, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(byKind["CustomResourceDefinition"]).To(HaveLen(len(bases)), "config/crd/kustomization.yaml must list every file of config/crd/bases")
		var plurals, kinds []string
		for _, o := range byKind["CustomResourceDefinition"] {
			crd := convert[apiextensionsv1.CustomResourceDefinition](o)
			Expect(crd.Spec.Names.Categories).To(ContainElement("infrastate"), crd.Name)
			plurals = append(plurals, crd.Spec.Names.Plural)
			kinds = append(kinds, crd.Spec.Names.Kind)
		}

		By("PROJECT, read by kubebuilder-aware tools, lists every kind")
		data, err := os.ReadFile(filepath.Join(root, "PROJECT"))
		Expect(err).NotTo(HaveOccurred())
		var project struct {
			Resources []struct {
				Kind string `json:"kind"`
			} `json:"resources"`
		}
		Expect(utilyaml.Unmarshal(data, &project)).To(Succeed())
		var projectKinds []string
		for _, r := range project.Resources {
			projectKinds = append(projectKinds, r.Kind)
		}
		Expect(projectKinds).To(ConsistOf(kinds))

		By("the manager's ClusterRole covers every kind and its status")
		managerRole := find(byKind["ClusterRole"], "backend-operator-manager-role")
		role := convert[rbacv1.ClusterRole](managerRole)
		for _, plural := range plurals {
			Expect(allows(role.Rules, "backends.infrastate.io", plural, "watch")).To(BeTrue(), plural)
			Expect(allows(role.Rules, "backends.infrastate.io", plural+"/status", "patch")).To(BeTrue(), plural+"/status")
		}

		By("the manager's ClusterRole grants what the manager calls, and nothing more")
		// Every rendered object's owner reference sets blockOwnerDeletion,
		// which needs update on the owner's finalizers where the API server
		// enforces owner reference permissions (OpenShift does). The manager
		// deletes only the ConfigMaps and Secrets it wrote under a previous
		// name (a renamed configMapName or RemoteState target), and writes
		// its kinds only through their status, but for the finalizers it
		// patches: a StateLock's, and a backend's statelock-protection.
		Expect(grants(role.Rules)).To(Equal(map[string][]string{
			"configmaps":                                     {"create", "delete", "get", "list", "patch", "watch"},
			"secrets":                                        {"create", "delete", "get", "list", "patch", "watch"},
			"events.events.k8s.io":                           {"create", "patch"},
			"httpbackends.backends.infrastate.io":            {"get", "list", "patch", "watch"},
			"cosbackends.backends.infrastate.io":             {"get", "list", "patch", "watch"},
			"remotestates.backends.infrastate.io":            {"get", "list", "watch"},
			"httpbackends/status.backends.infrastate.io":     {"patch"},
			"cosbackends/status.backends.infrastate.io":      {"patch"},
			"remotestates/status.backends.infrastate.io":     {"patch"},
			"httpbackends/finalizers.backends.infrastate.io": {"update"},
			"cosbackends/finalizers.backends.infrastate.io":  {"update"},
			"remotestates/finalizers.backends.infrastate.io": {"update"},
			// A StateLock's finalizer is added and removed with a patch;
			// the holder-gone lock policy reads one Pod by name.
			"statelocks.backends.infrastate.io":        {"get", "list", "patch", "watch"},
			"statelocks/status.backends.infrastate.io": {"patch"},
			"pods": {"get"},
			// OutputGrants are read, and report their consumers; the
			// labels of namespaces are what their selectors match.
			"outputgrants.backends.infrastate.io":        {"get", "list", "watch"},
			"outputgrants/status.backends.infrastate.io": {"patch"},
			"namespaces": {"list", "watch"},
			// StateHistories and StateRestores are read, and report
			// through their status only.
			"statehistories.backends.infrastate.io":        {"get", "list", "watch"},
			"statehistories/status.backends.infrastate.io": {"patch"},
			"staterestores.backends.infrastate.io":         {"get", "list", "watch"},
			"staterestores/status.backends.infrastate.io":  {"patch"},
		}))

		By("the Deployment: image, leader election, probes, resources, non-root, read-only root filesystem, /tmp a bounded emptyDir")
		Expect(byKind["Deployment"]).To(HaveLen(1))
		deploy := convert[appsv1.Deployment](byKind["Deployment"][0])
		pod := deploy.Spec.Template.Spec
		Expect(pod.ServiceAccountName).To(Equal(find(byKind["ServiceAccount"], "backend-operator-controller-manager").GetName()))
		Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
		Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		Expect(pod.Containers).To(HaveLen(1))
		c := pod.Containers[0]
		Expect(c.Image).To(HavePrefix("ghcr.io/infrastate/backend-operator:"))
		Expect(c.Args).To(ContainElements("--leader-elect", "--health-probe-bind-address=:8081"))
		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			Expect(c.Resources.Requests).To(HaveKey(res))
			Expect(c.Resources.Limits).To(HaveKey(res))
		}
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		Expect(c.SecurityContext.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")))
		// The spool of the states copied between two stores (os.TempDir):
		// the one writable directory, bounded.
		Expect(c.VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: "spool", MountPath: "/tmp"}))
		Expect(pod.Volumes).To(HaveLen(1))
		Expect(pod.Volumes[0].Name).To(Equal("spool"))
		Expect(pod.Volumes[0].EmptyDir).NotTo(BeNil(), "the spool is an emptyDir")
		Expect(pod.Volumes[0].EmptyDir.SizeLimit).NotTo(BeNil(), "the spool is bounded")
		Expect(pod.Volumes[0].EmptyDir.SizeLimit.String()).To(Equal("2Gi"), "the spool's sizeLimit")
		leaderRole := convert[rbacv1.Role](find(byKind["Role"], "backend-operator-leader-election-role"))
		Expect(allows(leaderRole.Rules, "coordination.k8s.io", "leases", "update")).To(BeTrue())

		By("the API server accepts it, and Pod Security (restricted) has nothing to say")
		manifest := filepath.Join(GinkgoT().TempDir(), "default.yaml")
		Expect(os.WriteFile(manifest, []byte(rendered), 0o600)).To(Succeed())
		applied := kc.run(ctx, "", "", "apply", "--server-side", "--force-conflicts", "-f", manifest)
		Expect(applied.err).NotTo(HaveOccurred(), applied.stderr)
		Expect(applied.stderr).NotTo(ContainSubstring("Warning"))
		Expect(kc.jsonpath(ctx, "", "namespace/"+deployNamespace, "{.metadata.labels.pod-security\\.kubernetes\\.io/warn}")).To(Equal("restricted"))
	})

	It("is deployed by make deploy with the image IMG names", func(ctx SpecContext) {
		const image = "example.test/backend-operator:v1.2.3"
		r := makeDeploy(ctx, "IMG="+image)
		Expect(r.err).NotTo(HaveOccurred(), "make deploy:\n%s", r.stderr)
		Expect(managerImages(ctx)).To(Equal([]string{image}))

		By("the API server lets the manager's service account do what it needs, and not what it does not")
		for _, c := range []struct {
			verb, resource, subresource string
			allowed                     bool
		}{
			{"update", "httpbackends.backends.infrastate.io", "finalizers", true},
			{"update", "cosbackends.backends.infrastate.io", "finalizers", true},
			{"update", "remotestates.backends.infrastate.io", "finalizers", true},
			{"patch", "remotestates.backends.infrastate.io", "status", true},
			{"delete", "configmaps", "", true},
			{"delete", "secrets", "", true},
			// Its Events go through events.k8s.io; the core API's are leader
			// election's, in its own namespace only.
			{"create", "events.events.k8s.io", "", true},
			{"create", "events", "", false},
			// Its backends' statelock-protection finalizer.
			{"patch", "httpbackends.backends.infrastate.io", "", true},
			{"patch", "statelocks.backends.infrastate.io", "", true},
			{"get", "pods", "", true},
			{"list", "pods", "", false},
			{"watch", "pods", "", false},
			{"delete", "httpbackends.backends.infrastate.io", "", false},
			{"patch", "outputgrants.backends.infrastate.io", "status", true},
			{"patch", "outputgrants.backends.infrastate.io", "", false},
			{"watch", "namespaces", "", true},
			{"get", "namespaces", "", false},
		} {
			args := []string{"auth", "can-i", c.verb, c.resource, "--as", managerServiceAccount}
			if c.subresource != "" {
				args = append(args, "--subresource", c.subresource)
			}
			answer := kc.run(ctx, "default", "", args...)
			Expect(strings.TrimSpace(answer.stdout)).To(Equal(map[bool]string{true: "yes", false: "no"}[c.allowed]),
				"can the manager %s %s/%s? %s", c.verb, c.resource, c.subresource, answer.stderr)
		}
	})

	It("refuses to deploy an IMG that is not an image reference, and applies nothing", func(ctx SpecContext) {
		before := managerImages(ctx)
		r := makeDeploy(ctx, "IMG=example.test/Backend-Operator:v1")
		Expect(r.err).To(HaveOccurred(), "make deploy should fail:\n%s", r.stdout)
		Expect(r.stderr).To(ContainSubstring("IMG=example.test/Backend-Operator:v1 is not an image reference"))
		Expect(managerImages(ctx)).To(Equal(before))

		r = makeDeploy(ctx, "IMG=example.test/backend-operator")
		Expect(r.err).To(HaveOccurred(), "make deploy should fail:\n%s", r.stdout)
		Expect(r.stderr).To(ContainSubstring("IMG=example.test/backend-operator has neither a tag nor a digest"))
		Expect(managerImages(ctx)).To(Equal(before))
	})

	It("refuses to deploy a configuration whose image IMG cannot set, and applies nothing", func(ctx SpecContext) {
		// A configuration that names the manager's image differently: the
		// images: entry of hack/deploy.sh matches nothing in it.
		ns := fmt.Sprintf("e2e-deploy-refused-%d", time.Now().UnixNano())
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources:\n  - manager.yaml\n"), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "manager.yaml"), []byte(`apiVersion: v1
kind: Namespace
metadata:
  name: `+ns+`
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: manager
  namespace: `+ns+`
spec:
  selector:
    matchLabels: {app: manager}
  template:
    metadata:
      labels: {app: manager}
    spec:
      containers:
        - name: manager
          image: registry.example.com/someone-else/operator:v1
`), 0o600)).To(Succeed())

		r := runDeployScript(ctx, "example.test/backend-operator:v1.2.3", "apply", dir)
		Expect(r.err).To(HaveOccurred(), "hack/deploy.sh should fail:\n%s", r.stdout)
		Expect(r.stderr).To(ContainSubstring("renders image(s) registry.example.com/someone-else/operator:v1, not only example.test/backend-operator:v1.2.3"))
		Expect(kc.run(ctx, "", "", "get", "namespace/"+ns).stderr).To(ContainSubstring("NotFound"))
	})

	It("removes what a configuration lists, as make undeploy does with config/default", func(ctx SpecContext) {
		// make undeploy itself would delete the CRDs the other specs use.
		ns := newNamespace(ctx, "undeploy")
		manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deployed\n  namespace: " + ns + "\n"
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources:\n  - configmap.yaml\n"), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "configmap.yaml"), []byte(manifest), 0o600)).To(Succeed())
		kc.apply(ctx, ns, manifest)

		r := runDeployScript(ctx, "", "delete", dir)
		Expect(r.err).NotTo(HaveOccurred(), "hack/deploy.sh delete:\n%s", r.stderr)
		Expect(kc.run(ctx, ns, "", "get", "configmap/deployed").stderr).To(ContainSubstring("NotFound"))
	})
})

// managerImages are the container images of the Deployment make deploy
// applies, or nil when it is not there.
func managerImages(ctx context.Context) []string {
	r := kc.run(ctx, deployNamespace, "", "get", "deployment/backend-operator-controller-manager", "-o", "json")
	if strings.Contains(r.stderr, "NotFound") {
		return nil
	}
	ExpectWithOffset(1, r.err).NotTo(HaveOccurred(), r.stderr)
	deploy := &appsv1.Deployment{}
	ExpectWithOffset(1, json.Unmarshal([]byte(r.stdout), deploy)).To(Succeed())
	var images []string
	for _, c := range deploy.Spec.Template.Spec.Containers {
		images = append(images, c.Image)
	}
	return images
}

// makeDeploy runs make deploy with vars from the repository root with the
// suite's kubectl and kubeconfig. It does not
// remake manifests: make test checks them before it runs the tests, and
// rewriting them here would race with the suites that read them.
func makeDeploy(ctx context.Context, vars ...string) result {
	args := append([]string{"--no-print-directory", "-o", "manifests", "deploy", "KUBECTL=" + kc.path}, vars...)
	return runInRepo(ctx, nil, "make", args...)
}

// runDeployScript runs hack/deploy.sh with IMG, the suite's kubectl and
// kubeconfig.
func runDeployScript(ctx context.Context, img string, args ...string) result {
	return runInRepo(ctx, []string{"IMG=" + img, "KUBECTL=" + kc.path}, filepath.Join("hack", "deploy.sh"), args...)
}

// runInRepo runs name with args from the repository root, with env, the
// suite's kubeconfig and kubectl's HOME, and nothing else of the test's
// environment but PATH. It fails only when name cannot be started.
func runInRepo(ctx context.Context, env []string, name string, args ...string) result {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = append([]string{"HOME=" + kc.home, "PATH=" + os.Getenv("PATH"), "KUBECONFIG=" + kc.kubeconfig}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		Fail("running " + name + ": " + err.Error())
	}
	GinkgoWriter.Printf("$ %s %s\n%s%s", name, strings.Join(args, " "), stdout.String(), stderr.String())
	return result{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// convert turns an unstructured object into a typed one.
func convert[T any](obj *unstructured.Unstructured) *T {
	out := new(T)
	ExpectWithOffset(1, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out)).To(Succeed())
	return out
}

// find returns the object called name.
func find(objs []*unstructured.Unstructured, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetName() == name {
			return o
		}
	}
	Fail("no object called " + name)
	return nil
}

// grants lists the verbs rules grant on each resource, as
// "resource.group" (or "resource" for the core group), sorted.
func grants(rules []rbacv1.PolicyRule) map[string][]string {
	out := map[string][]string{}
	for _, r := range rules {
		ExpectWithOffset(1, r.ResourceNames).To(BeEmpty())
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				key := resource
				if group != "" {
					key += "." + group
				}
				out[key] = append(out[key], r.Verbs...)
			}
		}
	}
	for key, verbs := range out {
		slices.Sort(verbs)
		out[key] = slices.Compact(verbs)
	}
	return out
}

// allows reports whether rules grant verb on group/resource.
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && (slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
			return true
		}
	}
	return false
}
