package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/controllers/internal/owned"
)

// The API storage budget: the bytes of the ConfigMaps and Secrets the
// operator writes in a namespace (see owned.Ledger). A backend whose
// render does not fit stalls with reason BudgetExceeded and is reconciled
// again as soon as bytes are given back in its namespace (storageReleases);
// a RemoteState whose outputs do not fit reports it in OutputsReady
// (budgetObservation), and reads its state again and publishes as soon as
// bytes are given back, rather than at its next read.

// storageReleases is the source of the reconciles of kind's objects whose
// write the API storage budget refused: each is reconciled again once
// bytes are given back where it was refused (an object of its namespace
// deleted or shrunk, or, for the total, anywhere).
type storageReleases struct {
	ledger *owned.Ledger
	kind   string
	// due, when set, makes the woken object's next read due at once: a
	// RemoteState's refused outputs are not kept, and are read again.
	due func(types.NamespacedName)
}

// Start registers the wake-up of the refused writers of the kind.
func (s storageReleases) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.ledger.OnRelease(s.kind, func(key types.NamespacedName) {
		if s.due != nil {
			s.due(key)
		}
		q.Add(reconcile.Request{NamespacedName: key})
	})
	return nil
}

// budgetObservation is the OutputsReady observation of a publication the
// API storage budget refused (err is its BudgetExceeded stall), and
// whether err is one. Nothing was written: the outputs published last stay,
// and they are read and published again as soon as bytes are given back.
func budgetObservation(err error) (conditions.Observation, bool) {
	se, ok := conditions.AsStall(err)
	if !ok || se.Reason != backendsv1alpha1.BudgetExceededReason {
		return conditions.Observation{}, false
	}
	return conditions.Observation{Status: metav1.ConditionFalse, Reason: backendsv1alpha1.BudgetExceededReason,
		Message: "The outputs were not published: " + se.Message + ". They are read and published again as soon as they fit"}, true
}
