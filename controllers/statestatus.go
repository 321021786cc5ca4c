package controllers

import (
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	backendsv1alpha1 "github.com/infrastate/backend-operator/api/v1alpha1"
	"github.com/infrastate/backend-operator/controllers/internal/conditions"
	"github.com/infrastate/backend-operator/internal/stateclient"
	"github.com/infrastate/backend-operator/internal/statefile"
)

// What a probe or a read learned of a state and its lock, as status, the
// same for every kind. The functions of this file are pure and
// table-tested.

// stateStatus is status.state for a present state of size bytes; every
// kind reports a state this way. What the state holds is clipped to the
// API's bounds, so that a state written by anything but Terraform cannot
// make the status patch fail.
func stateStatus(summary statefile.Summary, size int64) *backendsv1alpha1.StateSummary {
	return &backendsv1alpha1.StateSummary{
		Present:          true,
		Serial:           int64(min(summary.Serial, math.MaxInt64)),
		Lineage:          conditions.Clip(summary.Lineage, 128),
		TerraformVersion: conditions.Clip(summary.TerraformVersion, 64),
		SizeBytes:        size,
		OutputCount:      int32(min(max(summary.OutputCount, 0), math.MaxInt32)),
		Encrypted:        summary.Encrypted,
	}
}

// lockInfo is status.lock for a lock holder; nil when the holder is
// unknown.
func lockInfo(l *stateclient.LockInfo) *backendsv1alpha1.LockInfo {
	if l == nil {
		return nil
	}
	// The holder wrote these fields; clip them to the bounds of the API so
	// that an oversized lock cannot make the status patch fail.
	out := &backendsv1alpha1.LockInfo{
		ID: conditions.Clip(l.ID, 256), Operation: conditions.Clip(l.Operation, 256), Info: conditions.Clip(l.Info, 4096),
		Who: conditions.Clip(l.Who, 512), Version: conditions.Clip(l.Version, 64), Path: conditions.Clip(l.Path, 1024),
	}
	if !l.Created.IsZero() {
		created := metav1.NewTime(l.Created)
		out.Created = &created
	}
	return out
}

// describeHolder is the Locked message for a holder.
func describeHolder(h *backendsv1alpha1.LockInfo) string {
	if h == nil {
		return "The state is locked by a holder whose lock information cannot be read."
	}
	msg := fmt.Sprintf("The state is locked: ID %s", h.ID)
	if h.Who != "" {
		msg += ", held by " + h.Who
	}
	if h.Operation != "" {
		msg += ", operation " + h.Operation
	}
	if h.Created != nil {
		msg += ", since " + h.Created.UTC().Format(time.RFC3339)
	}
	return msg + "."
}
