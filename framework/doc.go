// Package framework will hold Client, the layer every recipe stands on: a
// namespace, ACLs, retries, an error policy, context-aware node operations,
// Curator-compatible protected create and guaranteed delete.
//
// Not built yet: see the connection framework issue in the README's roadmap.
package framework
