package validation

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testenv"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// sampleFiles lists the manifests in config/samples, without kustomization.yaml.
func sampleFiles() []string {
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "samples", "*.yaml"))
	if err != nil {
		panic(err)
	}
	var samples []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			samples = append(samples, f)
		}
	}
	return samples
}

// readObjects decodes every YAML document of a file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(doc, &obj.Object); err != nil {
			return nil, err
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

var _ = Describe("Samples", func() {
	It("lists at least one sample of each kind", func() {
		kinds := map[string]bool{}
		for _, f := range sampleFiles() {
			objs, err := readObjects(f)
			Expect(err).NotTo(HaveOccurred())
			for _, o := range objs {
				kinds[o.GetKind()] = true
			}
		}
		Expect(kinds).To(HaveKey("HttpBackend"))
		Expect(kinds).To(HaveKey("CosBackend"))
	})

	for _, file := range sampleFiles() {
		It("accepts "+filepath.Base(file), func(ctx context.Context) {
			ns := newNamespace(ctx)
			objs, err := readObjects(file)
			Expect(err).NotTo(HaveOccurred())
			Expect(objs).NotTo(BeEmpty())
			for _, obj := range objs {
				obj.SetNamespace(ns)
				Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "creating %s %s", obj.GetKind(), obj.GetName())
			}
		}, SpecTimeout(time.Minute))
	}
})

var _ = Describe("Defaults", func() {
	It("fills the documented HttpBackend defaults", func(ctx context.Context) {
		ns := newNamespace(ctx)
		hb := builders.MakeHttpBackend("defaults", ns, "https://state.example.com/state/app").Obj()
		Expect(k8sClient.Create(ctx, hb)).To(Succeed())

		got := &backendsv1alpha1.HttpBackend{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(hb), got)).To(Succeed())
		Expect(got.Spec.UpdateMethod).To(Equal("POST"))
		Expect(got.Spec.LockMethod).To(Equal("LOCK"))
		Expect(got.Spec.UnlockMethod).To(Equal("UNLOCK"))
		Expect(got.Spec.RetryMax).To(HaveValue(BeEquivalentTo(2)))
		Expect(got.Spec.RetryWaitMin).To(HaveValue(BeEquivalentTo(1)))
		Expect(got.Spec.RetryWaitMax).To(HaveValue(BeEquivalentTo(30)))
		Expect(got.Spec.Probe).To(BeNil(), "the probe interval is the manager's default, not filled in")
		Expect(got.Status.ObservedGeneration).To(BeEquivalentTo(-1))
	}, SpecTimeout(time.Minute))

	It("fills the documented CosBackend defaults", func(ctx context.Context) {
		ns := newNamespace(ctx)
		cb := builders.MakeCosBackend("defaults", ns, "tfstate-1250000000").
			AssumeRole("qcs::cam::uin/100000000001:roleName/tfstate", "operator").Obj()
		Expect(k8sClient.Create(ctx, cb)).To(Succeed())

		got := &backendsv1alpha1.CosBackend{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cb), got)).To(Succeed())
		Expect(got.Spec.AssumeRole.SessionDuration).To(HaveValue(BeEquivalentTo(7200)))
		Expect(got.Spec.Probe).To(BeNil(), "the probe interval is the manager's default, not filled in")
		Expect(got.Status.ObservedGeneration).To(BeEquivalentTo(-1))
	}, SpecTimeout(time.Minute))

	It("fills the documented RemoteState defaults, and no read interval", func(ctx context.Context) {
		ns := newNamespace(ctx)
		rs := builders.MakeRemoteState("defaults", ns, backendsv1alpha1.CosBackendKind, "network").
			Outputs(backendsv1alpha1.OutputSelector{Name: "vpc_id"}).Obj()
		rs.Spec.Probe = &backendsv1alpha1.ProbeSpec{} // a probe block without an interval
		Expect(k8sClient.Create(ctx, rs)).To(Succeed())

		got := &backendsv1alpha1.RemoteState{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(rs), got)).To(Succeed())
		Expect(got.Spec.Workspace).To(Equal("default"))
		Expect(got.Spec.Outputs).To(ConsistOf(HaveField("Type", "any")))
		Expect(got.Spec.Interval).To(BeNil()) //nolint:staticcheck // SA1019: checks that the deprecated spec.interval gets no default
		Expect(got.Spec.Probe).To(HaveValue(HaveField("Interval", BeNil())))
		Expect(got.Status.ObservedGeneration).To(BeEquivalentTo(-1))
	}, SpecTimeout(time.Minute))

	It("keeps an explicit zero retryMax and a disabled probe", func(ctx context.Context) {
		ns := newNamespace(ctx)
		obj := httpBackend(set("spec.retryMax", int64(0)), set("spec.retryWaitMin", int64(0)), set("spec.probe.interval", "0s"))
		obj.SetNamespace(ns)
		Expect(k8sClient.Create(ctx, obj)).To(Succeed())

		got := &backendsv1alpha1.HttpBackend{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
		Expect(got.Spec.RetryMax).To(HaveValue(BeEquivalentTo(0)))
		Expect(got.Spec.RetryWaitMin).To(HaveValue(BeEquivalentTo(0)))
		Expect(got.Spec.Probe.Interval.Duration).To(BeZero())
	}, SpecTimeout(time.Minute))
})
