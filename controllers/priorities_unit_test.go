package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testing/builders"
)

// readyAt is condition Ready with status s for generation g.
func readyAt(s metav1.ConditionStatus, g int64) metav1.Condition {
	return metav1.Condition{Type: backendsv1alpha1.ReadyCondition, Status: s, ObservedGeneration: g, Reason: "Test"}
}

// settledBackend is an HttpBackend Ready at its generation 2.
func settledBackend(name string) *builders.HttpBackendWrapper {
	return builders.MakeHttpBackend(name, "team-a", "https://state.example/x").Generation(2).ObservedGeneration(2).
		Condition(readyAt(metav1.ConditionTrue, 2))
}

// settledLock is a StateLock Ready at its generation g.
func settledLock(g int64) *backendsv1alpha1.StateLock {
	sl := builders.MakeStateLock("l", "team-a", backendsv1alpha1.HttpBackendKind, "app").Generation(g).Condition(readyAt(metav1.ConditionTrue, g)).Obj()
	sl.Status.ObservedGeneration = g
	return sl
}

func TestFirstListPriority(t *testing.T) {
	newBackend := func() *builders.HttpBackendWrapper {
		return builders.MakeHttpBackend("b", "team-a", "https://state.example/x").Generation(1).ObservedGeneration(-1)
	}
	cases := map[string]struct {
		obj  statusObject
		want int
	}{
		"Ready at its generation": {obj: settledBackend("b").Obj(), want: handler.LowPriority},
		"new, no status":          {obj: newBackend().Obj(), want: 0},
		"spec changed while the manager was away": {
			obj:  settledBackend("b").Generation(3).Obj(),
			want: 0,
		},
		"Ready for an older generation, observedGeneration current": {
			obj:  builders.MakeHttpBackend("b", "team-a", "https://x").Generation(2).ObservedGeneration(2).Condition(readyAt(metav1.ConditionTrue, 1)).Obj(),
			want: 0,
		},
		"Ready False: stalled or failing": {
			obj:  builders.MakeHttpBackend("b", "team-a", "https://x").Generation(2).ObservedGeneration(2).Condition(readyAt(metav1.ConditionFalse, 2)).Obj(),
			want: 0,
		},
		"Ready Unknown": {
			obj:  builders.MakeHttpBackend("b", "team-a", "https://x").Generation(2).ObservedGeneration(2).Condition(readyAt(metav1.ConditionUnknown, 2)).Obj(),
			want: 0,
		},
		"no Ready condition": {
			obj:  builders.MakeHttpBackend("b", "team-a", "https://x").Generation(2).ObservedGeneration(2).Obj(),
			want: 0,
		},
		"being deleted": {
			obj:  settledBackend("b").Finalizers("f").Deleted(time.Unix(1, 0)).Obj(),
			want: 0,
		},
		"a settled StateLock": {obj: settledLock(1), want: handler.LowPriority},
		"a StateLock not yet observed": {
			obj:  builders.MakeStateLock("l", "team-a", backendsv1alpha1.HttpBackendKind, "app").Generation(1).Condition(readyAt(metav1.ConditionTrue, 1)).Obj(),
			want: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := firstListPriority(tc.obj); got != tc.want {
				t.Errorf("firstListPriority() = %d, want %d", got, tc.want)
			}
		})
	}
}

// queued is one item a priority queue handed out.
type queued struct {
	Name     string
	Priority int
}

// drain takes n items from q in the order it hands them out.
func drain(t *testing.T, q priorityqueue.PriorityQueue[reconcile.Request], n int) []queued {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	var got []queued
	for range n {
		req, priority, _ := q.GetWithPriority()
		q.Done(req)
		got = append(got, queued{Name: req.Name, Priority: priority})
	}
	return got
}

func TestOwnEventsQueuesSettledObjectsOfTheFirstListLast(t *testing.T) {
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := &ownEvents{}

	// The first list, in the order it came: two settled backends around
	// a new one and one whose spec changed.
	h.Create(ctx, ctrlevent.CreateEvent{Object: settledBackend("old-a").Obj(), IsInInitialList: true}, q)
	h.Create(ctx, ctrlevent.CreateEvent{Object: settledBackend("changed").Generation(3).Obj(), IsInInitialList: true}, q)
	h.Create(ctx, ctrlevent.CreateEvent{Object: settledBackend("old-b").Obj(), IsInInitialList: true}, q)
	h.Create(ctx, ctrlevent.CreateEvent{
		Object:          builders.MakeHttpBackend("new", "team-a", "https://x").Generation(1).ObservedGeneration(-1).Obj(),
		IsInInitialList: true,
	}, q)
	// Created after the first list: the default priority, however it
	// looks.
	h.Create(ctx, ctrlevent.CreateEvent{Object: settledBackend("later").Obj()}, q)

	want := []queued{
		{Name: "changed", Priority: 0},
		{Name: "new", Priority: 0},
		{Name: "later", Priority: 0},
		{Name: "old-a", Priority: handler.LowPriority},
		{Name: "old-b", Priority: handler.LowPriority},
	}
	if diff := cmp.Diff(want, drain(t, q, len(want))); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestOwnEventsKeepsForsPriorityOfUpdates(t *testing.T) {
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := &ownEvents{}

	old := settledBackend("resynced").Obj()
	old.ResourceVersion = "7"
	h.Update(ctx, ctrlevent.UpdateEvent{ObjectOld: old, ObjectNew: old.DeepCopy()}, q)
	changed := old.DeepCopy()
	changed.Name, changed.ResourceVersion = "changed", "8"
	h.Update(ctx, ctrlevent.UpdateEvent{ObjectOld: old, ObjectNew: changed}, q)

	want := []queued{{Name: "changed", Priority: 0}, {Name: "resynced", Priority: handler.LowPriority}}
	if diff := cmp.Diff(want, drain(t, q, len(want))); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestOwnEventsWithoutPriorities(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	(&ownEvents{}).Create(context.Background(), ctrlevent.CreateEvent{Object: settledBackend("old").Obj(), IsInInitialList: true}, q)

	req, _ := q.Get()
	if want := (reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "old"}}); req != want {
		t.Errorf("queued %v, want %v", req, want)
	}
}

func TestRequeueAfter(t *testing.T) {
	cases := map[string]struct {
		after time.Duration
		want  ctrl.Result
	}{
		"no requeue":                {after: 0, want: ctrl.Result{}},
		"a time: behind the events": {after: time.Minute, want: ctrl.Result{RequeueAfter: time.Minute, Priority: new(handler.LowPriority)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, requeueAfter(tc.after)); diff != "" {
				t.Errorf("requeueAfter(%s) (-want +got):\n%s", tc.after, diff)
			}
		})
	}
}
