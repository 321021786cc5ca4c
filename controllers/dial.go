package controllers

import (
	"context"
	"errors"
	"net"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/infrastate/backend-operator/internal/netguard"
)

// logRefusals logs every connection dial refuses under the address
// policy, with the logger of ctx (the reconcile's, or the manager's). The
// backend's condition already tells its owner; the log tells the cluster's
// administrators that a tenant aimed the operator at an address they deny,
// and lets a test run see that the manager tried to leave the addresses it
// was given.
func logRefusals(dial netguard.DialFunc) netguard.DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dial(ctx, network, address)
		if errors.Is(err, netguard.ErrAddressDenied) {
			ctrl.LoggerFrom(ctx).Info("Connection refused by the address policy", "address", address, "refusal", err.Error())
		}
		return conn, err
	}
}
