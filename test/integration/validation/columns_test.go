package validation

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// statusOf is a status for the columns spec: Ready with reason and
// message, and (on a backend) status.locked.
type statusOf struct {
	reason, message, locked string
}

// readyCondition is a Ready condition that is not True, for reason.
func readyCondition(reason, message string) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: reason, Message: message,
		LastTransitionTime: metav1.Now()}}
}

// What kubectl get shows of each kind is what its printer columns say:
// the reason of Ready on every kind, its message with -o wide, and a
// backend's LOCKED never blank once the controller wrote status.locked.
var _ = Describe("kubectl get", func() {
	var kubectl func(ctx context.Context, ns string, args ...string) string
	BeforeEach(func() {
		admin := newAdminKubectl()
		kubectl = func(ctx context.Context, ns string, args ...string) string {
			out, err := admin.run(ctx, ns, args...)
			Expect(err).NotTo(HaveOccurred(), "kubectl %s:\n%s", strings.Join(args, " "), out)
			return string(out)
		}
	})

	DescribeTable("shows the reason of Ready, and its message with -o wide",
		func(ctx context.Context, resource string, obj client.Object, status statusOf, wantHeader []string) {
			ns := newNamespace(ctx)
			obj.SetNamespace(ns)
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			switch o := obj.(type) {
			case *backendsv1alpha1.HttpBackend:
				o.Status.Conditions, o.Status.Locked = readyCondition(status.reason, status.message), status.locked
			case *backendsv1alpha1.CosBackend:
				o.Status.Conditions, o.Status.Locked = readyCondition(status.reason, status.message), status.locked
				o.Status.Region = "ap-guangzhou"
			case *backendsv1alpha1.RemoteState:
				o.Status.Conditions = readyCondition(status.reason, status.message)
			case *backendsv1alpha1.StateLock:
				o.Status.Conditions = readyCondition(status.reason, status.message)
			case *backendsv1alpha1.OutputGrant:
				o.Status.Conditions, o.Status.ConsumerCount = readyCondition(status.reason, status.message), 2
			case *backendsv1alpha1.StateHistory:
				o.Status.Conditions, o.Status.SnapshotCount = readyCondition(status.reason, status.message), 2
				o.Status.Snapshots = []backendsv1alpha1.StateSnapshot{{Serial: 7, Lineage: "l", SizeBytes: 1, SHA256: "s", Key: "k", TakenAt: metav1.Now()}}
			case *backendsv1alpha1.StateRestore:
				o.Status.Conditions = readyCondition(status.reason, status.message)
			}
			Expect(k8sClient.Status().Update(ctx, obj)).To(Succeed())

			plain := strings.Split(strings.TrimSpace(kubectl(ctx, ns, "get", resource, obj.GetName())), "\n")
			Expect(plain).To(HaveLen(2))
			Expect(strings.Fields(plain[0])).To(Equal(wantHeader))
			row := strings.Fields(plain[1])
			Expect(row).To(ContainElement(status.reason))
			Expect(plain[1]).NotTo(ContainSubstring(status.message), "the message is for -o wide")
			if status.locked != "" {
				Expect(row[indexOf(wantHeader, "LOCKED")]).To(Equal(status.locked))
			}

			wide := kubectl(ctx, ns, "get", resource, obj.GetName(), "-o", "wide")
			Expect(wide).To(ContainSubstring("MESSAGE"))
			Expect(wide).To(ContainSubstring(status.message))
		},
		Entry("HttpBackend", "httpbackend", builders.MakeHttpBackend("app", "", "https://state.example.com/app").Obj(),
			statusOf{reason: "Unauthorized", message: "The state server asks for credentials", locked: "Unchecked"},
			[]string{"NAME", "READY", "ADDRESS", "LOCKED", "STATUS", "AGE"}),
		Entry("CosBackend", "cosbackend", builders.MakeCosBackend("app", "", "tfstate-1250000000").Region("ap-guangzhou").Obj(),
			statusOf{reason: "BucketNotFound", message: "Bucket tfstate-1250000000 does not exist", locked: "False"},
			[]string{"NAME", "READY", "BUCKET", "REGION", "LOCKED", "STATUS", "AGE"}),
		Entry("RemoteState", "remotestate", builders.MakeRemoteState("network", "", backendsv1alpha1.HttpBackendKind, "app").Obj(),
			statusOf{reason: "StateNotFound", message: "The backend holds no state for workspace default"},
			[]string{"NAME", "READY", "BACKEND", "SERIAL", "STATUS", "AGE"}),
		Entry("StateLock", "statelock", builders.MakeStateLock("freeze", "", backendsv1alpha1.HttpBackendKind, "app").Reason("Release freeze").Obj(),
			statusOf{reason: "WaitingForLock", message: "Waiting for the lock of HttpBackend app"},
			[]string{"NAME", "READY", "BACKEND", "HELD", "STATUS", "AGE"}),
		Entry("OutputGrant", "outputgrant", &backendsv1alpha1.OutputGrant{ObjectMeta: metav1.ObjectMeta{Name: "network"},
			Spec: backendsv1alpha1.OutputGrantSpec{To: []backendsv1alpha1.GrantConsumer{{Namespace: "team-z"}}}},
			statusOf{reason: "NamespaceNotWatched", message: "The manager watches only the namespaces team-a"},
			[]string{"NAME", "READY", "CONSUMERS", "STATUS", "AGE"}),
		Entry("StateHistory", "statehistory", &backendsv1alpha1.StateHistory{ObjectMeta: metav1.ObjectMeta{Name: "network"},
			Spec: backendsv1alpha1.StateHistorySpec{BackendRef: backendsv1alpha1.BackendReference{Kind: backendsv1alpha1.HttpBackendKind, Name: "app"},
				Destination: backendsv1alpha1.HistoryDestination{CosBackendRef: backendsv1alpha1.LocalObjectReference{Name: "backups"}}}},
			statusOf{reason: "DestinationFull", message: "The destination refuses new objects"},
			[]string{"NAME", "BACKEND", "SNAPSHOTS", "NEWEST", "READY", "STATUS", "AGE"}),
		Entry("StateRestore", "staterestore", &backendsv1alpha1.StateRestore{ObjectMeta: metav1.ObjectMeta{Name: "to-3"},
			Spec: backendsv1alpha1.StateRestoreSpec{HistoryRef: backendsv1alpha1.LocalObjectReference{Name: "network"}, Serial: 3}},
			statusOf{reason: "WaitingForLock", message: "The source's lock is held by ci@runner"},
			[]string{"NAME", "HISTORY", "SERIAL", "WRITTEN", "READY", "STATUS", "AGE"}),
	)
})

// indexOf is the index of s in list, -1 when absent.
func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
