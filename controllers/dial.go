package controllers

import (
	"context"
	"errors"
	"net"

	"github.com/go-logr/logr"

	"github.com/infrastate/backend-operator/internal/netguard"
)

// logRefusals logs to log every connection dial refuses under the address
// policy. The backend's condition already tells its owner; the log tells
// the cluster's administrators that a tenant aimed the operator at an
// address they deny, and lets a test run see that the manager tried to
// leave the addresses it was given.
func logRefusals(log logr.Logger, dial netguard.DialFunc) netguard.DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dial(ctx, network, address)
		if errors.Is(err, netguard.ErrAddressDenied) {
			log.Info("Connection refused by the address policy", "address", address, "refusal", err.Error())
		}
		return conn, err
	}
}
