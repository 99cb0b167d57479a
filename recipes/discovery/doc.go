// Package discovery is service discovery wire-compatible with Apache
// Curator's curator-x-discovery 5.4: ServiceDiscovery (Discovery),
// ServiceInstance (Instance), ServiceCache (Cache) and ServiceProvider
// (Provider) with its strategies (RoundRobin, Random, Sticky) and
// DownInstancePolicy (WithDownInstancePolicy). Go and Java processes
// register into, and find each other in, the same base path.
//
// # Protocol
//
// An instance of service name with id lives at basePath/<name>/<id>, its
// data the JSON of Curator's JsonInstanceSerializer: an object with name,
// id, address, port, sslPort, payload, registrationTimeUTC, serviceType,
// uriSpec and enabled, in that order (Instance.MarshalJSON writes exactly
// the bytes Curator's serializer writes in its full form; Curator's
// default, compatible, form leaves out "enabled", which reads as true).
// Instance keeps the payload's JSON as it is, so a Java payload read and
// written back by Go is unchanged (see Payloads below). The node is
// ephemeral for Dynamic
// instances, ephemeral-sequential for DynamicSequential (its name is the
// id and a sequence number, as in Curator, behind Curator's protected
// prefix: see below), persistent for Static and Permanent; the service's
// node is made as a container.
//
// # Payloads
//
// Curator's JsonInstanceSerializer reads every instance's payload into
// the reader's payload class (ServiceDiscoveryBuilder.builder(C)), typed
// by Jackson's "@class" property, and one it cannot read fails the
// reader's whole query of the service (queryForInstances, and so its
// ServiceCache and ServiceProvider: a ClassCastException), not only that
// instance. What each reader's class reads (Curator 5.4, Jackson 2.14,
// tested against the real jars):
//
//	Object        null, a string, a number, a boolean, an object without
//	              "@class" (as a LinkedHashMap), an object whose "@class"
//	              names a class the reader can load (as that class)
//	Map           null, an object without "@class", an object whose
//	              "@class" names a Map (java.util.HashMap)
//	String        null, a string
//	your class C  null, an object whose "@class" is C, with C's
//	              properties (those C lacks are ignored)
//	Void          null only
//
// None reads an array, or an "@class" it cannot load. Curator writes a
// payload in the same form: a string as a JSON string, an object with
// its "@class" first. The Go side cannot know the Java readers' class: a
// payload is a contract between a service's writers and its readers.
// JavaPayload(class, v) writes, from a Go value, what a reader of class
// reads (an Object reader reads it as class too); Instance.PayloadClass
// and Instance.DecodePayload read what Curator wrote.
//
// # Beyond Curator
//
//   - A DynamicSequential instance's node has a protected name
//     ("_c_<uuid>-<id><sequence>"), so that a create whose reply was lost
//     finds its node: Curator's registerService makes a second one, and
//     the first stays as a phantom instance until the session ends.
//     Curator's readers list the service's children and read their JSON:
//     the prefix does not change what they find.
//   - The zero Instance is enabled (Curator's builder makes every
//     instance enabled): Instance.Disabled turns it off.
//   - A registration is a persistent.Node: a Dynamic instance is made
//     again as soon as a new session is up after an expiry, and after a
//     delete by someone else, with its last Update (Curator re-registers on
//     reconnection only). Register returns once the node is in place;
//     Registration says whether it still is, and Subscribe follows every
//     registration's status.
//   - Two live registrations of one id (two processes given one id): the
//     newest Register takes the node, as Curator's registerService
//     deletes what it finds and makes its own, but in one multi, so that
//     the other, which makes its node again as soon as it sees it gone,
//     cannot take it back in between. The registration that lost its
//     node is told (Registration and Subscribe: not in place,
//     persistent.ErrOtherOwner), where Curator's is left believing it is
//     registered (and takes the node back at its next reconnection); it
//     makes its node again only once the newer one's goes.
//   - The Cache says when its view may be stale (the error of
//     Cache.Instances wraps zkrecipes.ErrStale), and catches up after
//     every gap. Its subscription tells a new subscriber the instances
//     once (a Snapshot), then each one Added, Updated and Removed, and
//     Stale and Current as the view stops and starts being current
//     (Curator's ServiceCacheListener hears cacheChanged with nothing in
//     it, and the connection's states).
//   - Bad input (a name or an id that is not one path segment, a payload
//     that is not JSON, an instance too large for a node) is refused
//     before anything is sent.
//
// The Cache is the module's cache (recipes/cache) in its Children shape,
// holding each instance's data: a change of one instance costs one read, a
// gap one read per instance, and each instance holds a data watch (see the
// cache's costs). Its staleness is the cache's: zkrecipes.ErrStale with the
// reason.
//
// Every error names the recipe and its path ("service discovery
// /services: ...", "service cache /services/billing: ...", "service
// provider /services/billing: ...") and wraps the module's sentinels;
// ErrNotRegistered and ErrNoInstance are this package's own.
package discovery
