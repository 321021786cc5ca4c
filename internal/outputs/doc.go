// Package outputs selects, type-checks and encodes the root module outputs
// of a state for publication, as the terraform_remote_state data source
// reads them: defaults fill outputs the state lacks, the state's values
// win, and the typed readers (get, getString, getNumber, getBoolean,
// getList) check types. Plain outputs go to a ConfigMap and sensitive ones
// only to a Secret. Read streams a state from a reader within the bounds of
// a ConfigMap and a Secret; every other function is pure.
package outputs
