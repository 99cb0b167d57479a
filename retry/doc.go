// Package retry holds retry policies and the loop that runs a ZooKeeper
// operation under a policy. It is the Go counterpart of Apache Curator's
// RetryPolicy and RetryLoop.
//
// # Mapping to Curator
//
// Curator's RetryPolicy answers allowRetry(retryCount, elapsedTimeMs, sleeper)
// once per failed attempt. A [Policy] here is a small value that answers the
// same question ([Custom] takes exactly that function); the per-operation
// state lives in the loop (on github.com/cenkalti/backoff/v4, which no
// signature shows), so one Policy value can be shared by any number of
// concurrent operations. The constructors mirror Curator's policies:
//
//	ExponentialBackoffRetry         -> [Exponential]
//	BoundedExponentialBackoffRetry  -> [BoundedExponential]
//	RetryNTimes                     -> [NTimes]
//	RetryOneTime                    -> [OneTime]
//	RetryUntilElapsed               -> [UntilElapsed]
//	RetryForever                    -> [Forever]
//
// [Never] has no Curator counterpart; it makes tests fail fast. The zero
// Policy is [Default].
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
