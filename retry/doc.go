// Package retry holds retry policies and the loop that runs a ZooKeeper
// operation under a policy. It is the Go counterpart of Apache Curator's
// RetryPolicy and RetryLoop.
//
// # Mapping to Curator
//
// Curator's RetryPolicy answers allowRetry(retryCount, elapsedTimeMs, sleeper)
// once per failed attempt. Here a [Policy] instead hands out a fresh
// [backoff.BackOff] per operation, and the loop asks it NextBackOff after every
// retryable failure; [backoff.Stop] plays the role of allowRetry returning false.
// Keeping the per-operation state in the BackOff lets one Policy value be shared
// by any number of concurrent operations. The constructors mirror Curator's
// policies:
//
//	ExponentialBackoffRetry         -> [Exponential]
//	BoundedExponentialBackoffRetry  -> [BoundedExponential]
//	RetryNTimes                     -> [NTimes]
//	RetryOneTime                    -> [OneTime]
//	RetryUntilElapsed               -> [UntilElapsed]
//	RetryForever                    -> [Forever]
//
// [Never] has no Curator counterpart; it makes tests fail fast.
//
// Curator's RetryLoop becomes [Do], which honours a context.Context so that a
// caller can abandon an operation in the middle of a back-off sleep.
//
// # What is retried
//
// [Retryable] decides which failures are worth another attempt on the same
// session. Unlike Curator, an expired session is not retried: the new session
// has lost every ephemeral node and watch of the old one, so only the caller
// knows whether carrying on is correct.
package retry
