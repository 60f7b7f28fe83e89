// Package transfer describes transfers of control between agents: the target
// (by name), the tool the model calls, how history travels (policy and
// transforms) and the typed context delivered to the target.
package transfer
