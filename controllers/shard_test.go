package controllers

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// shardSelector is the --watch-label-selector of the shard name, or of
// the main shard when name is empty, as the chart sets them.
func shardSelector(name string) labels.Selector {
	value := "!" + ShardLabel
	if name != "" {
		value = ShardLabel + " in (" + name + ")"
	}
	selector, err := labels.Parse(value)
	Expect(err).NotTo(HaveOccurred())
	return selector
}

// onShard labels obj for the shard name (the main shard when empty).
func onShard(obj client.Object, name string) client.Object {
	if name != "" {
		obj.SetLabels(map[string]string{ShardLabel: name})
	}
	return obj
}

// moveToShard moves obj to the shard name, as `kubectl label --overwrite`
// does.
func moveToShard(ctx context.Context, obj client.Object, name string) {
	GinkgoHelper()
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	obj.SetLabels(map[string]string{ShardLabel: name})
	Expect(k8sClient.Patch(ctx, obj, patch)).To(Succeed())
}

// writesNaming returns the writes whose path names an object called name
// (a status patch, a finalizer patch, an update or a delete).
func writesNaming(w *writeCounter, from int, name string) []string {
	var out []string
	for _, write := range w.since(from) {
		if strings.HasSuffix(write, "/"+name) || strings.Contains(write, "/"+name+"/") {
			out = append(out, write)
		}
	}
	return out
}

// dialCounter connects to loopback addresses, as the suite's guard lets
// managers, and counts the connections.
type dialCounter struct{ n atomic.Int64 }

// DialContext is a netguard.DialFunc.
func (d *dialCounter) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("dialCounter: %s is not a loopback address", address)
	}
	d.n.Add(1)
	var dialer net.Dialer
	return dialer.DialContext(ctx, network, address)
}

// count is the number of connections so far.
func (d *dialCounter) count() int64 { return d.n.Load() }

var _ = Describe("Shards (--watch-label-selector)", func() {
	It("lets two managers with disjoint selectors each reconcile only their own objects", func() {
		ctx, ns := newSpec()
		srv := httptest.NewServer(stateserver.New(stateserver.NewMemoryStore()))
		DeferCleanup(srv.Close)
		a := startManager(ctx, ns, WithShard(shardSelector("a")))
		main := startManager(ctx, ns, WithShard(shardSelector("")))

		onA := builders.MakeHttpBackend("on-a", ns, srv.URL+"/state/on-a").Obj()
		onMain := builders.MakeHttpBackend("on-main", ns, srv.URL+"/state/on-main").Obj()
		create(ctx, onShard(onA, "a"), onShard(onMain, ""))
		for _, b := range []*backendsv1alpha1.HttpBackend{onA, onMain} {
			eventually(ctx, b, func(g Gomega) {
				expectCondition(g, b.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
			})
		}

		By("each manager writing only its own backend's objects")
		Expect(writesNaming(a, 0, "on-a")).NotTo(BeEmpty(), "shard a wrote its backend's status")
		Expect(writesNaming(a, 0, "on-main")).To(BeEmpty(), "shard a wrote to the main shard's backend")
		Expect(writesNaming(main, 0, "on-main")).NotTo(BeEmpty(), "the main shard wrote its backend's status")
		Expect(writesNaming(main, 0, "on-a")).To(BeEmpty(), "the main shard wrote to shard a's backend")
		Expect(renderedConfigMap(ctx, Default, ns, "on-a-backend").Data).NotTo(BeEmpty())
		Expect(renderedConfigMap(ctx, Default, ns, "on-main-backend").Data).NotTo(BeEmpty())
	})

	It("moves a StateLock and its backend to another shard with the lock held throughout: never released, never taken again, checked by one manager", func() {
		ctx, ns := newSpec()
		counting := stateserver.New(stateserver.NewMemoryStore(), stateserver.WithRequestCounting())
		srv := httptest.NewServer(counting)
		DeferCleanup(srv.Close)
		// Each manager's connections to the state server: every probe and
		// every check of the lock opens one.
		dialsA, dialsB := &dialCounter{}, &dialCounter{}
		a := startManager(ctx, ns, WithShard(shardSelector("a")), WithLockReleaseWait(stateLockWait), withDial(dialsA.DialContext))
		b := startManager(ctx, ns, WithShard(shardSelector("b")), WithLockReleaseWait(stateLockWait), withDial(dialsB.DialContext))

		backend := builders.MakeHttpBackend("app", ns, srv.URL+"/state/app").Locks().ProbeInterval(10 * time.Second).Obj()
		sl := makeFreeze(ns, backendsv1alpha1.HttpBackendKind).Obj()
		create(ctx, onShard(backend, "a"), onShard(sl, "a"))
		id := eventuallyHeld(ctx, sl)
		heldSince := sl.Status.HeldSince
		// Shard a has written all it learned: the backend names the
		// StateLock as its lock's holder.
		eventually(ctx, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, backendsv1alpha1.LockHeldReason)
		})
		Expect(dialsA.count()).NotTo(BeZero())
		Expect(dialsB.count()).To(BeZero(), "shard b reached the state server of shard a's backend")

		By("relabelling both to shard b")
		// The backend learned how its server treats UNLOCK bodies before
		// the StateLock took its lock, with locks of its own.
		fromA, fromB, unlocks := len(a.since(0)), len(b.since(0)), counting.Requests("UNLOCK", "")
		moveToShard(ctx, backend, "b")
		moveToShard(ctx, sl, "b")

		By("shard b checking the same lock while it stays held, and shard a no longer reaching the server")
		Eventually(dialsB.count, timeout, interval).ShouldNot(BeZero())
		// An operation shard a started before the relabel may still end.
		time.Sleep(time.Second)
		stoppedAt, adoptedAt := dialsA.count(), dialsB.count()
		// Longer than the backend's probe interval: both the backend's
		// probe and the StateLock's check of its lock come around.
		Consistently(func(g Gomega) {
			getObject(ctx, g, sl)
			expectCondition(g, sl.Status.Conditions, "Locked", metav1.ConditionTrue, backendsv1alpha1.LockAcquiredReason)
			g.Expect(sl.Status.LockID).To(Equal(id))
			g.Expect(sl.Status.HeldSince).To(Equal(heldSince))
			g.Expect(dialsA.count()).To(Equal(stoppedAt), "shard a still probes or checks the lock")
		}, 12*time.Second, interval).Should(Succeed())
		Expect(dialsB.count()).To(BeNumerically(">", adoptedAt), "shard b stopped checking")
		Expect(counting.Requests("UNLOCK", "")).To(Equal(unlocks), "the lock was released")
		holder := peekLock(ctx, srv.URL+"/state/app", false)
		Expect(holder).NotTo(BeNil())
		Expect(holder.ID).To(Equal(id))
		Expect(holder.Created.Equal(heldSince.Time)).To(BeTrue(), "the lock was taken anew at %s, held since %s", holder.Created, heldSince)

		By("shard a writing nothing more about them, and shard b writing no status it did not change")
		Expect(writesNaming(a, fromA, "app")).To(BeEmpty())
		Expect(writesNaming(a, fromA, "freeze")).To(BeEmpty())
		Expect(writesNaming(b, fromB, "freeze")).To(BeEmpty(), "shard b rewrote the StateLock")
		Expect(writesNaming(b, fromB, "app")).To(BeEmpty(), "shard b rewrote the backend")
		// Its watches held none of the backend's rendered objects while
		// shard a had it: shard b reads them, and creates none again.
		Expect(b.since(fromB)).NotTo(ContainElement(MatchRegexp(`^POST .*/(configmaps|secrets)$`)),
			"shard b created the backend's rendered objects again")

		By("shard b releasing the lock when the StateLock is deleted")
		Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
		eventuallyGone(ctx, sl)
		Expect(counting.Requests("UNLOCK", "")).To(BeNumerically(">", unlocks))
		Expect(peekLock(ctx, srv.URL+"/state/app", false)).To(BeNil())
		Expect(dialsA.count()).To(Equal(stoppedAt), "shard a took part in the release")
	})

	It("reports a backend or StateHistory on another shard with ReferenceOnOtherShard, and reads it once it moves in", func() {
		ctx, ns := newSpec()
		startManager(ctx, ns, WithShard(shardSelector("a")), withShardMoveGrace(2*time.Second))
		createPassword(ctx, ns)
		seedState(ctx, stateURL(ns), v4State(1, `"vpc_id":{"value":"vpc-1","type":"string"}`))
		backend := makeStateBackend("app", ns).Obj()
		create(ctx, onShard(backend, "b"))

		remote := builders.MakeRemoteState("outputs", ns, backendsv1alpha1.HttpBackendKind, "app").Obj()
		expectExplained(ctx, onShard(remote, "a").(*backendsv1alpha1.RemoteState), "Stalled", metav1.ConditionTrue, backendsv1alpha1.ReferenceOnOtherShardReason,
			`HttpBackend app of namespace `+ns+` is on shard "b" (sharding.fluxcd.io/key=b)`, `--watch-label-selector="sharding.fluxcd.io/key in (a)"`)
		create(ctx, onShard(builders.MakeStateHistory("history", ns, backendsv1alpha1.HttpBackendKind, "app", "snapshots").Obj(), "b"))
		restore := builders.MakeStateRestore("back", ns, "history", 1).Obj()
		expectExplained(ctx, onShard(restore, "a").(*backendsv1alpha1.StateRestore), "Stalled", metav1.ConditionTrue, backendsv1alpha1.ReferenceOnOtherShardReason,
			`StateHistory history of namespace `+ns+` is on shard "b"`)
		lock := makeFreeze(ns, backendsv1alpha1.HttpBackendKind).Obj()
		lock.Spec.BackendRef.Name = "elsewhere"
		create(ctx, builders.MakeHttpBackend("elsewhere", ns, stateURL(ns)).Obj())
		expectExplained(ctx, onShard(lock, "a").(*backendsv1alpha1.StateLock), "Stalled", metav1.ConditionTrue, backendsv1alpha1.ReferenceOnOtherShardReason,
			`HttpBackend elsewhere of namespace `+ns+` is on the main shard (no sharding.fluxcd.io/key label)`)

		By("the backend moving to shard a")
		moveToShard(ctx, backend, "a")
		eventually(ctx, remote, func(g Gomega) {
			expectCondition(g, remote.Status.Conditions, "Ready", metav1.ConditionTrue, "Succeeded")
		})
	})
})
