package controllers

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/internal/testenv"
)

// TestRemoveFinalizer checks the last step of a StateLock's deletion: the
// finalizer is removed, and a StateLock already gone (another replica,
// or the API server, finished the deletion) is no error to retry.
func TestRemoveFinalizer(t *testing.T) {
	cases := map[string]struct {
		// stored: the StateLock is still in the API server.
		stored bool
	}{
		"held by the finalizer": {stored: true},
		"already gone":          {stored: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sl := &backendsv1alpha1.StateLock{ObjectMeta: metav1.ObjectMeta{
				Namespace: "team-a", Name: "freeze", Finalizers: []string{backendsv1alpha1.StateLockFinalizer},
			}}
			builder := fake.NewClientBuilder().WithScheme(testenv.Scheme())
			if tc.stored {
				builder = builder.WithObjects(sl.DeepCopy())
			}
			c := builder.Build()
			stored := &backendsv1alpha1.StateLock{}
			if tc.stored {
				if err := c.Get(t.Context(), client.ObjectKeyFromObject(sl), stored); err != nil {
					t.Fatal(err)
				}
				sl = stored
			}
			r := newStateLockReconciler(c, c, nil)
			if err := r.removeFinalizer(t.Context(), sl); err != nil {
				t.Fatalf("removeFinalizer: %v", err)
			}
			after := &backendsv1alpha1.StateLock{}
			err := c.Get(t.Context(), client.ObjectKeyFromObject(sl), after)
			switch {
			case tc.stored && err != nil:
				t.Fatalf("reading the StateLock back: %v", err)
			case tc.stored && len(after.Finalizers) != 0:
				t.Errorf("finalizers = %v, want none", after.Finalizers)
			case !tc.stored && !apierrors.IsNotFound(err):
				t.Errorf("reading a StateLock that was never stored: %v, want NotFound", err)
			}
		})
	}
}

// TestUntilWaitEnds checks when a deleted StateLock whose release is under
// way comes back: as its operation asks, and never after the lock release
// wait ends.
func TestUntilWaitEnds(t *testing.T) {
	cases := map[string]struct {
		requeueAfter, waitLeft, want time.Duration
	}{
		"the operation's retry first":         {requeueAfter: 2 * time.Second, waitLeft: time.Minute, want: 2 * time.Second},
		"the wait's end first":                {requeueAfter: time.Minute, waitLeft: 3 * time.Second, want: 3 * time.Second},
		"only a notification: the wait's end": {requeueAfter: 0, waitLeft: 3 * time.Second, want: 3 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := untilWaitEnds(tc.requeueAfter, tc.waitLeft); got != tc.want {
				t.Errorf("untilWaitEnds(%s, %s) = %s, want %s", tc.requeueAfter, tc.waitLeft, got, tc.want)
			}
		})
	}
}
