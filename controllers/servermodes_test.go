package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gstruct"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/stateserver"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// serverKind is a kind of state server of docs/servers.md, played by the
// reference server in one of its modes, with what the operator must make
// of it.
type serverKind struct {
	name string
	opts []stateserver.Option
	// holderInConflicts and ignoresBody are what status.server must say.
	holderInConflicts, ignoresBody bool
	// heldReason is the Ready reason of a StateLock holding its lock once
	// checked: LockAcquired where the server can confirm it is its own,
	// HolderNotReported where nothing can.
	heldReason string
	// afterSwap is what deleting a StateLock does once its lock was
	// released behind its back and another holder took it: "" when the
	// kind is not tried (its UNLOCK releases any lock, and nothing names
	// the holder: docs/servers.md states the limit).
	afterSwap swapOutcome
}

// swapOutcome is what a StateLock does about a lock another took behind
// its back. Never silence, never the other holder's lock released.
type swapOutcome string

const (
	// swapLost: its check sees the other holder and reports LockLost.
	swapLost swapOutcome = "LockLost"
	// swapLeft: its release is refused in a way that says the lock held
	// is another's (the server checks the ID it names): nothing is left
	// of its own, and the other lock stays.
	swapLeft swapOutcome = "left alone"
	// swapNotReleased: nothing tells whose the lock is; deleting the
	// StateLock says at once, with a LockNotReleased event, that its lock
	// may still be held.
	swapNotReleased swapOutcome = "LockNotReleased"
)

var serverKinds = []serverKind{
	{name: "C: plain-text 409, checks the ID", opts: []stateserver.Option{stateserver.WithConflictAnswer(stateserver.ConflictText409)},
		heldReason: backendsv1alpha1.HolderNotReportedReason, afterSwap: swapLeft},
	{name: "C+R: plain-text 423, re-entrant LOCK", opts: []stateserver.Option{stateserver.WithConflictAnswer(stateserver.ConflictText423), stateserver.WithReentrantLock()},
		heldReason: backendsv1alpha1.LockAcquiredReason, afterSwap: swapLost},
	{name: "D: holder in 423, UNLOCK ignores its body", opts: []stateserver.Option{stateserver.WithUnlockCheck(stateserver.UnlockIgnoresBody)},
		holderInConflicts: true, ignoresBody: true, heldReason: backendsv1alpha1.LockAcquiredReason, afterSwap: swapLost},
	{name: "D+C: plain-text 409, UNLOCK ignores its body", opts: []stateserver.Option{stateserver.WithConflictAnswer(stateserver.ConflictText409), stateserver.WithUnlockCheck(stateserver.UnlockIgnoresBody)},
		ignoresBody: true, heldReason: backendsv1alpha1.HolderNotReportedReason},
	{name: "E: holder in 423, exact body only", opts: []stateserver.Option{stateserver.WithUnlockCheck(stateserver.UnlockExactBody)},
		holderInConflicts: true, heldReason: backendsv1alpha1.LockAcquiredReason, afterSwap: swapLost},
	{name: "E+C: plain-text 409, exact body only", opts: []stateserver.Option{stateserver.WithConflictAnswer(stateserver.ConflictText409), stateserver.WithUnlockCheck(stateserver.UnlockExactBody)},
		heldReason: backendsv1alpha1.HolderNotReportedReason, afterSwap: swapNotReleased},
	{name: "F3: plain-text 423, no force unlock", opts: []stateserver.Option{stateserver.WithConflictAnswer(stateserver.ConflictText423), stateserver.WithUnlockBodies(stateserver.AcceptNoForceUnlock)},
		heldReason: backendsv1alpha1.HolderNotReportedReason, afterSwap: swapNotReleased},
}

// forceUnlockReleases reports whether forceUnlock releases a named lock
// on kind (docs/servers.md): where the server checks the ID, or a
// conflict names the holder; never where any UNLOCK releases any lock
// and nothing names the holder, nor where only an exact LockInfo that
// nothing shows releases.
func forceUnlockReleases(kind serverKind) bool {
	return kind.holderInConflicts || (!kind.ignoresBody && kind.afterSwap != swapNotReleased)
}

// modeServer is a reference server in one mode, over loopback TCP, with
// its store at hand to see and change the lock behind the operator's back.
type modeServer struct {
	*stateserver.Server
	store *stateserver.MemoryStore
	url   string
}

// startModeServer starts a reference server with opts for the spec.
func startModeServer(opts []stateserver.Option) *modeServer {
	store := stateserver.NewMemoryStore()
	server := stateserver.New(store, opts...)
	srv := httptest.NewServer(server)
	DeferCleanup(srv.Close)
	return &modeServer{Server: server, store: store, url: srv.URL}
}

// address is the state of namespace on the server.
func (m *modeServer) address(ns string) string { return m.url + "/state/" + ns }

// lock is the LockInfo the server stores as the lock of namespace's
// state, nil while it is free.
func (m *modeServer) lock(ns string) *stateclient.LockInfo {
	GinkgoHelper()
	rec, err := m.store.Load(ns)
	Expect(err).NotTo(HaveOccurred())
	if rec.State != nil {
		Expect(rec.State.Close()).To(Succeed())
	}
	if rec.Lock == nil {
		return nil
	}
	var info stateclient.LockInfo
	Expect(json.Unmarshal(rec.Lock, &info)).To(Succeed())
	return &info
}

// swapLock replaces the lock of namespace's state with another holder's,
// as if someone had force-unlocked it and a run had taken it since, and
// returns that holder's ID.
func (m *modeServer) swapLock(ns string) string {
	GinkgoHelper()
	other := stateclient.NewLockInfo("OperationTypeApply", "bob@ci")
	data, err := json.Marshal(other)
	Expect(err).NotTo(HaveOccurred())
	Expect(m.store.Update(ns, func(r *stateserver.Record) error { r.Lock = data; return nil })).To(Succeed())
	return other.ID
}

// runLock is a LOCK as terraform apply sends it: it must be refused while
// a StateLock holds the lock.
func (m *modeServer) runLock(ctx context.Context, ns string) error {
	sc := lockingClient(m.address(ns), false)
	defer sc.CloseIdleConnections()
	_, err := sc.Lock(ctx, stateclient.NewLockInfo("OperationTypeApply", "alice@laptop"))
	return err
}

// modeProbeInterval is how often the backends of these specs probe, and
// so how often a StateLock checks its lock.
const modeProbeInterval = 2 * time.Second

var _ = Describe("StateLock on each kind of state server", func() {
	// A release wait far longer than the specs' timeout: a LockNotReleased
	// event within the timeout came at once, not after the wait.
	spec := eachSpecWithManager(WithLockReleaseWait(10*time.Minute), WithDefaultProbeInterval(modeProbeInterval))

	// holdFreeze creates the backend "app" on m (locks, no lock check)
	// and a StateLock on it, and waits until the backend has learned the
	// server and the StateLock holds the lock, as kind says it can tell.
	holdFreeze := func(ctx context.Context, ns string, m *modeServer, kind serverKind) (*backendsv1alpha1.HttpBackend, *backendsv1alpha1.StateLock) {
		GinkgoHelper()
		backend := builders.MakeHttpBackend("app", ns, m.address(ns)).Locks().Obj()
		sl := makeFreeze(ns, backendsv1alpha1.HttpBackendKind).Obj()
		create(ctx, backend, sl)
		eventually(ctx, backend, func(g Gomega) {
			server := backend.Status.Server
			g.Expect(server).NotTo(BeNil(), "status.server")
			g.Expect(server.LocksExclusive).To(BeTrue())
			g.Expect(server.HolderInConflicts).To(Equal(kind.holderInConflicts))
			g.Expect(server.UnlockIgnoresBody).To(Equal(kind.ignoresBody))
		})
		eventually(ctx, sl, func(g Gomega) {
			expectCondition(g, sl.Status.Conditions, "Ready", metav1.ConditionTrue, kind.heldReason)
			g.Expect(sl.Status.LockID).NotTo(BeEmpty())
			expectKstatusInvariants(g, sl)
		})
		held := m.lock(ns)
		Expect(held).NotTo(BeNil(), "the server holds a lock")
		Expect(held.ID).To(Equal(sl.Status.LockID))
		Expect(held.Who).To(Equal("backend-operator/" + ns + "/freeze"))
		return backend, sl
	}

	for _, kind := range serverKinds {
		Context(kind.name, func() {
			It("holds the freeze, never reports a lock it holds as lost, and releases it when deleted", func() {
				ctx, ns := spec.ctx, spec.ns
				m := startModeServer(kind.opts)
				_, sl := holdFreeze(ctx, ns, m, kind)
				id := sl.Status.LockID
				if kind.heldReason == backendsv1alpha1.HolderNotReportedReason {
					expectConditionSaying(Default, sl.Status.Conditions, "Locked", metav1.ConditionUnknown, backendsv1alpha1.HolderNotReportedReason, id)
				}

				By("a run's LOCK refused while the StateLock is checked, again and again")
				Expect(m.runLock(ctx, ns)).To(BeAssignableToTypeOf(&stateclient.LockError{}))
				Consistently(func(g Gomega) {
					getObject(ctx, g, sl)
					expectCondition(g, sl.Status.Conditions, "Ready", metav1.ConditionTrue, kind.heldReason)
					g.Expect(sl.Status.LockID).To(Equal(id))
					g.Expect(m.lock(ns)).To(HaveField("ID", id))
				}, 3*modeProbeInterval, 200*time.Millisecond).Should(Succeed())

				By("deleting the StateLock")
				Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
				eventuallyGone(ctx, sl)
				Expect(m.lock(ns)).To(BeNil(), "the lock was released")
				eventuallyEvent(ctx, ns, backendsv1alpha1.LockReleasedReason)
				Expect(m.runLock(ctx, ns)).To(Succeed(), "a run gets the lock")
			})

			if kind.afterSwap == "" {
				return
			}
			It("never releases another's lock taken behind its back, and never goes silently: "+string(kind.afterSwap), func() {
				ctx, ns := spec.ctx, spec.ns
				m := startModeServer(kind.opts)
				_, sl := holdFreeze(ctx, ns, m, kind)
				id, other := sl.Status.LockID, m.swapLock(ns)

				if kind.afterSwap == swapLost {
					eventually(ctx, sl, func(g Gomega) {
						expectCondition(g, sl.Status.Conditions, "Stalled", metav1.ConditionTrue, backendsv1alpha1.LockLostReason)
						g.Expect(sl.Status.LockID).To(BeEmpty())
						if kind.holderInConflicts {
							g.Expect(sl.Status.Holder).To(HaveField("ID", other))
						}
					})
				}
				By("deleting the StateLock")
				Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
				eventuallyGone(ctx, sl)
				Expect(m.lock(ns)).To(HaveField("ID", other), "the other holder's lock stays")
				if kind.afterSwap == swapNotReleased {
					Eventually(func(g Gomega) []string { return eventMessages(ctx, g, ns, backendsv1alpha1.LockNotReleasedReason) }, timeout, interval).
						Should(ContainElement(And(ContainSubstring(id), ContainSubstring("refused its UNLOCK"))))
				} else {
					Expect(eventReasons(ctx, Default, ns)).NotTo(ContainElement(backendsv1alpha1.LockReleasedReason),
						"nothing was released")
				}
			})
		})
	}

	It("on GitLab, shows only what the server vouches for, finds its own lock by its ID, and creates no state to check a lock", func() {
		ctx, ns := spec.ctx, spec.ns
		m := startModeServer([]stateserver.Option{stateserver.WithGitLab(
			stateserver.GitLabUser{Name: "platform-bot", Token: statePassword, Role: stateserver.GitLabMaintainer},
			stateserver.GitLabUser{Name: "alice", Token: "alice-token", Role: stateserver.GitLabMaintainer})})
		address := m.url + "/api/v4/projects/42/terraform/state/" + ns
		createPassword(ctx, ns)
		backend := builders.MakeHttpBackend("app", ns, address).LockAddresses(address+"/lock", address+"/lock").
			BasicAuth("platform-bot", "state-password", "").LockCheck().Obj()
		backend.Spec.LockMethod, backend.Spec.UnlockMethod = http.MethodPost, http.MethodDelete
		create(ctx, backend)
		gitlab := func(password string) *stateclient.Client {
			cfg := stateclient.DefaultConfig(address)
			cfg.LockAddress, cfg.LockMethod, cfg.UnlockAddress, cfg.UnlockMethod = address+"/lock", http.MethodPost, address+"/lock", http.MethodDelete
			cfg.Username, cfg.Password = "platform-bot", password
			sc, err := stateclient.New(cfg)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(sc.CloseIdleConnections)
			return sc
		}
		operatorView := gitlab(statePassword)

		By("the lock check creating no state while there is none")
		eventuallyCondition(ctx, backend, "Locked", metav1.ConditionUnknown, backendsv1alpha1.LockNotCheckedReason)
		Consistently(func() (int, error) { return operatorView.FetchStatus(ctx) }, 3*modeProbeInterval, 500*time.Millisecond).
			Should(Equal(http.StatusNotFound), "the state is never created by a probe")

		By("a run writing the state, then holding the lock")
		Expect(operatorView.Update(ctx, v4State(1, ""))).To(Succeed())
		eventually(ctx, backend, func(g Gomega) {
			g.Expect(backend.Status.Server).NotTo(BeNil())
			g.Expect(backend.Status.Server.ConflictFields).To(HaveKeyWithValue("ID", backendsv1alpha1.ConflictFieldSource("holder")))
			g.Expect(backend.Status.Server.ConflictFields).To(HaveKeyWithValue("Operation", backendsv1alpha1.ConflictFieldSource("requester")))
			g.Expect(backend.Status.Server.ConflictFields).To(HaveKeyWithValue("Who", backendsv1alpha1.ConflictFieldSource("server")))
		})
		alice := stateclient.NewLockInfo("OperationTypeApply", "alice@laptop")
		_, err := gitlab("alice-token").Lock(ctx, alice)
		Expect(err).NotTo(HaveOccurred())
		reprobe(ctx, backend)
		eventually(ctx, backend, func(g Gomega) {
			expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, backendsv1alpha1.LockHeldReason)
			g.Expect(backend.Status.Lock).NotTo(BeNil())
			g.Expect(*backend.Status.Lock).To(gstruct.MatchFields(gstruct.IgnoreExtras, gstruct.Fields{
				"ID": Equal(alice.ID), "Who": Equal("alice"), "Operation": BeEmpty(), "Info": BeEmpty(), "Version": BeEmpty(), "Path": BeEmpty(),
			}), "the holder's ID and GitLab user, never the check's own Operation and Info echoed back")
		})
		Expect(gitlab("alice-token").UnlockWithBody(ctx, []byte(`{"ID":"`+alice.ID+`"}`))).To(Succeed())

		By("a StateLock whose status write was lost finding its lock by its ID, though GitLab rewrites Who")
		sl := makeFreeze(ns, backendsv1alpha1.HttpBackendKind).Obj()
		create(ctx, sl)
		id := eventuallyHeld(ctx, sl)
		held, err := gitlab(statePassword).Lock(ctx, stateclient.NewLockInfo("OperationTypeApply", "bob@ci"))
		Expect(held).To(BeEmpty())
		lockErr, ok := errors.AsType[*stateclient.LockError](err)
		Expect(ok).To(BeTrue(), "a conflict: %v", err)
		Expect(lockErr.Info).To(HaveField("ID", id))
		Expect(lockErr.Info).To(HaveField("Who", "platform-bot"))
		Eventually(func(g Gomega) {
			getObject(ctx, g, sl)
			sl.Status.LockID, sl.Status.LockInfo, sl.Status.HeldSince = "", nil, nil
			apimeta.RemoveStatusCondition(&sl.Status.Conditions, backendsv1alpha1.LockedCondition)
			g.Expect(k8sClient.Status().Update(ctx, sl)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		eventually(ctx, sl, func(g Gomega) {
			expectCondition(g, sl.Status.Conditions, "Ready", metav1.ConditionTrue, backendsv1alpha1.LockAcquiredReason)
			g.Expect(sl.Status.LockID).To(Equal(id), "its own lock, adopted, not waited for")
		})

		By("deleting the StateLock")
		Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
		eventuallyGone(ctx, sl)
		eventuallyEvent(ctx, ns, backendsv1alpha1.LockReleasedReason)
		_, err = gitlab(statePassword).Lock(ctx, alice)
		Expect(err).NotTo(HaveOccurred(), "the lock was released")
	})

	It("waits for the backend to learn its server, which it cannot while another holds the lock", func() {
		ctx, ns := spec.ctx, spec.ns
		m := startModeServer([]stateserver.Option{stateserver.WithConflictAnswer(stateserver.ConflictText409)})
		Expect(m.runLock(ctx, ns)).To(Succeed())
		create(ctx, builders.MakeHttpBackend("app", ns, m.address(ns)).Locks().Obj())
		sl := makeFreeze(ns, backendsv1alpha1.HttpBackendKind).Obj()
		create(ctx, sl)
		eventually(ctx, sl, func(g Gomega) {
			expectConditionSaying(g, sl.Status.Conditions, "Ready", metav1.ConditionUnknown, backendsv1alpha1.ProgressingReason, "to learn what its state server does with locks")
			expectKstatusInvariants(g, sl)
		})
		Consistently(func() string { return m.lock(ns).Who }, 2*modeProbeInterval, 200*time.Millisecond).
			Should(Equal("alice@laptop"), "the run's lock is never touched")

		By("the run releasing its lock")
		Expect(m.store.Update(ns, func(r *stateserver.Record) error { r.Lock = nil; return nil })).To(Succeed())
		eventually(ctx, sl, func(g Gomega) {
			expectCondition(g, sl.Status.Conditions, "Ready", metav1.ConditionTrue, backendsv1alpha1.HolderNotReportedReason)
		})
		Expect(strings.HasPrefix(m.lock(ns).Who, "backend-operator/")).To(BeTrue())
	})
})

var _ = Describe("Lock features on each kind of state server", func() {
	spec := eachSpecWithManager(WithDefaultProbeInterval(modeProbeInterval))

	for _, kind := range serverKinds {
		It("forceUnlock on "+kind.name+" releases the named lock and no other, or says why it cannot", func() {
			ctx, ns := spec.ctx, spec.ns
			m := startModeServer(kind.opts)
			backend := builders.MakeHttpBackend("app", ns, m.address(ns)).Locks().LockCheck().Obj()
			create(ctx, backend)
			eventually(ctx, backend, func(g Gomega) {
				g.Expect(backend.Status.Server).NotTo(BeNil())
				expectCondition(g, backend.Status.Conditions, "Locked", metav1.ConditionFalse, backendsv1alpha1.NotLockedReason)
			})
			Expect(m.runLock(ctx, ns)).To(Succeed())
			run := m.lock(ns).ID

			By("forceUnlock naming another lock")
			updateSpec(ctx, backend, func() { setForceUnlock(backend, "0d9c6f4e-0000-4000-8000-000000000000") })
			eventually(ctx, backend, func(g Gomega) {
				c := apimeta.FindStatusCondition(backend.Status.Conditions, "Locked")
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(c.Reason).To(BeElementOf(backendsv1alpha1.ForceUnlockSkippedReason, backendsv1alpha1.ForceUnlockUnsupportedReason), c.Message)
			})
			Expect(m.lock(ns)).To(HaveField("ID", run), "the run's lock is left alone")

			By("forceUnlock naming the run's lock")
			updateSpec(ctx, backend, func() { setForceUnlock(backend, run) })
			if forceUnlockReleases(kind) {
				eventuallyForceUnlocked(ctx, backend, run)
				Expect(m.lock(ns)).To(BeNil())
				return
			}
			eventually(ctx, backend, func(g Gomega) {
				expectConditionSaying(g, backend.Status.Conditions, "Locked", metav1.ConditionTrue, backendsv1alpha1.ForceUnlockUnsupportedReason, "force-unlock")
			})
			Expect(m.lock(ns)).To(HaveField("ID", run), "nothing was sent that could release it")
		})
	}

	for _, kind := range serverKinds {
		if !strings.Contains(kind.name, "exact body") {
			continue
		}
		It("releases on "+kind.name+" the lock check's own lock left over before a manager restart", func() {
			ctx, ns := newSpec()
			m := startModeServer(kind.opts)
			first := startManager(ctx, ns, WithDefaultProbeInterval(modeProbeInterval))
			backend := builders.MakeHttpBackend("app", ns, m.address(ns)).Locks().LockCheck().Obj()
			create(ctx, backend)
			eventuallyCondition(ctx, backend, "Locked", metav1.ConditionFalse, backendsv1alpha1.NotLockedReason)

			By("the server failing every UNLOCK")
			m.InjectFault(stateserver.Fault{Method: stateserver.MethodUnlock, Status: http.StatusBadGateway})
			eventuallyCondition(ctx, backend, "Locked", metav1.ConditionTrue, backendsv1alpha1.LockCheckNotReleasedReason)
			Expect(m.lock(ns)).To(HaveField("Who", "backend-operator lock check of HttpBackend "+ns+"/app"))

			By("a new manager, with the server answering again")
			first.stop()
			m.ClearFaults()
			startManager(ctx, ns, WithDefaultProbeInterval(modeProbeInterval))
			eventuallyCondition(ctx, backend, "Locked", metav1.ConditionFalse, backendsv1alpha1.NotLockedReason)
			Expect(m.lock(ns)).To(BeNil(), "its exact LockInfo, rebuilt by the new manager, released it")
		})
	}
})

var _ = Describe("StateLocks deleted together while their server hangs", func() {
	// One probe slot for the namespace: the releases queue behind each
	// other, each waiting on a server that never answers.
	spec := eachSpecWithManager(WithLockReleaseWait(3*time.Second), WithMaxConcurrentProbes(4, 1))

	It("are all gone within the lock release wait, each with a LockNotReleased event, whatever their number", func() {
		ctx, ns := spec.ctx, spec.ns
		m := startModeServer(nil)
		const count = 4
		var locks []*backendsv1alpha1.StateLock
		for i := range count {
			name := fmt.Sprintf("app-%d", i)
			create(ctx, builders.MakeHttpBackend(name, ns, m.address(fmt.Sprintf("%s-%d", ns, i))).Locks().Obj())
			sl := builders.MakeStateLock(fmt.Sprintf("freeze-%d", i), ns, backendsv1alpha1.HttpBackendKind, name).Reason("release freeze").Obj()
			create(ctx, sl)
			locks = append(locks, sl)
		}
		for _, sl := range locks {
			eventuallyHeld(ctx, sl)
		}

		By("the server no longer answering, and every StateLock deleted")
		// Each answer takes 10 s, far beyond the 3 s wait: queued one behind
		// the other, the four releases took 40 s, past the spec's timeout.
		m.InjectFault(stateserver.Fault{Delay: 10 * time.Second})
		for _, sl := range locks {
			Expect(k8sClient.Delete(ctx, sl)).To(Succeed())
		}
		for _, sl := range locks {
			eventuallyGone(ctx, sl)
		}
		Eventually(func(g Gomega) []string { return eventMessages(ctx, g, ns, backendsv1alpha1.LockNotReleasedReason) }, timeout, interval).
			Should(HaveLen(count))
	})
})
