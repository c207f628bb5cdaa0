// Package awsprovider is the bulwark provider "aws": real S3 buckets and
// DynamoDB tables, through aws-sdk-go-v2. Its dependencies stay in this
// module; core and sdk never see them.
//
// It reads one data source (sdk.DataReader), s3_bucket: an existing bucket
// by name (arn, region, bucket_regional_domain_name), one HeadBucket,
// writing and claiming nothing; a bucket that is not there is an error.
//
// What it guarantees, beyond the contract in package sdk:
//
//   - Credentials come only from the SDK's standard chain (environment,
//     shared files and profile, SSO, web identity, container and instance
//     roles). The provider config has no key for them, and the provider never
//     returns, logs or echoes them: config diagnostics name keys, never
//     values.
//   - Rejected credentials are said to be so, naming where they came from
//     (the environment, a shared file and profile, SSO, a role…), never
//     taken for an answer about a resource: a 403 from HeadBucket (which has
//     no body) is told apart by the code ListObjectsV2 answers with
//     (SignatureDoesNotMatch, InvalidAccessKeyId… → a *CredentialsError;
//     NoSuchBucket → absent; AccessDenied → another account's, or missing
//     permissions).
//   - Every call (Read, Create, Update, Delete, waits included) runs under a
//     deadline (timeout_seconds, 60 s by default); throttling and transient
//     errors are retried by the SDK's standard retryer. A throttling error
//     still there after its tries (the codes of the SDK's
//     retry.DefaultThrottles: Throttling, ThrottlingException, SlowDown,
//     RequestLimitExceeded, TooManyRequestsException,
//     ProvisionedThroughputExceededException, RequestThrottled, an HTTP
//     429) is answered sdk.Throttled, with the response's x-amz-retry-after
//     or Retry-After as its wait: the host backs off and sends the same
//     request again instead of failing the step.
//   - A Create records its idempotency key where Read can find it again, on
//     the resource itself: a table gets the tag bulwark:idempotency-key in its
//     CreateTable, a bucket the same tag in its CreateBucket and then the
//     object .bulwark/idempotency-key (on AWS both tags are set atomically
//     with the resource, so a Create killed at any instant left it marked).
//     Read returns it (ReadResponse.IdempotencyKey and the computed attribute
//     idempotency_key; "" for what bulwark did not make), and GetSchema
//     declares the idempotency_keys capability.
//   - Nothing lives in the data folder: what the provider needs later about
//     what it made (which bucket or table, the key, the region) is the
//     private data its Create returns, which the host stores with the
//     resource in the state, sealed (see record). Any machine that reaches
//     the stack's state can resume it. An endpoint that drops the tags given
//     at creation (the emulators) leaves a window between making a resource
//     and marking it: a Create killed there leaves one no retry claims (a
//     conflict; bulwark import takes it over).
//   - A Create looks before it creates, and one that meets a bucket or table
//     made under another key, or none, fails with an sdk.Conflict diagnostic
//     and leaves it as it is: never marked, seeded, emptied or deleted (AWS
//     answers 200 to a CreateBucket of a bucket the account owns in
//     us-east-1, so success alone proves nothing). A retried Create with the
//     same key returns what the first made.
//   - A Read by idempotency key answers Exists only for a resource that
//     carries that key.
//   - A Delete of a resource that carries an idempotency_key leaves alone a
//     bucket or table that now carries another key, or none (it was made
//     again by someone else).
//   - A read-only session (ConfigureRequest.ReadOnly: a plan) refuses
//     Create, Update and Delete, and writes nothing anywhere.
//   - Delete empties a bucket first (every object, and every version and
//     delete marker when versioning is on), then deletes it; a table is
//     deleted and waited for until it is gone. Deleting what is gone succeeds.
//   - Errors are branched on by API error code (smithy.APIError), never by Go
//     type: S3 returns several of them untyped.
//   - Create, Read and Update return every computed attribute, so other
//     resources can reference them: a bucket's arn and region, a table's
//     arn and its stream settings (stream_enabled, stream_view_type and
//     stream_arn, "" when streams are off) as DescribeTable reports them.
//     Streams are reported, never set: dynalite, the emulator the provider
//     is tested against, has none, so a setting could not be tested.
//   - A bucket is seeded with seed.txt, a table with the item whose hash key
//     is "seed" (0 for a number key), so a preserved resource visibly holds
//     data.
package awsprovider
