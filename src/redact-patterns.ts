/**
 * The redactor's built-in secret shapes, as data: a name, the pattern's source and one sample
 * each (the fixture corpus checks every row). Facts about the formats come from the public rule
 * sets of secret scanners (gitleaks, secretlint); the expressions are our own.
 * @module
 */

/** One built-in secret shape. */
export interface BuiltinSecretPattern {
  /** The name in the marker: `[REDACTED:<name>]` (two rows may share one). */
  readonly name: string;
  /**
   * The literal every match is found by, rare in ordinary text where the format allows (`-`, `_`,
   * a capital, `://`): a text without it costs the row one fast `indexOf`.
   */
  readonly anchor: string;
  /**
   * What comes right before the anchor, where a token starts (no letter, digit, `_` or `-` before
   * it), as a regular expression source; it is part of the secret.
   */
  readonly prefix?: string;
  /**
   * What follows the anchor, as a regular expression source. A group `secret`, ending where the
   * match ends, is the part replaced (what comes before it stays, as `Bearer `). Each unbounded
   * run is taken whole and starts only where a run of its characters starts, so a row is linear.
   */
  readonly pattern: string;
  /** A text holding one secret of this shape. */
  readonly sample: string;
  /** `sample` as the redactor shows it. */
  readonly redacted: string;
}

/** What a token is made of: a token starts where none of these stands before it. */
export const tokenCharacter = '[A-Za-z0-9_-]';
const token = tokenCharacter;
// The anchor is not preceded by a token character (for an anchor that starts a token).
const startsToken = (anchor: string) => `(?<!${token}${anchor})`;
// A run of token characters taken whole, never given back: a lookahead is atomic, and the
// backreference then consumes what it saw. Without it, a run with no `.` after it would be
// retried at every shorter length.
const wholeRun = (name: string) => `(?=(?<${name}>${token}+))\\k<${name}>`;
// The end of a fixed-length token: no token character follows.
const endsToken = `(?!${token})`;
// A PEM body's characters: base64, line breaks (real, or `\n` text with its backslashes) and
// the `Proc-Type: 4,ENCRYPTED` headers of an encrypted key. A `-` is taken alone, so that the body
// stops at the next `-----`: a text of many BEGIN lines is scanned once.
const pemBody = '[A-Za-z0-9+/=\\s\\\\:,.()]';
// What may stand between a key's name and its value: a quote (JSON text's `\"` too), `:` or `=`.
const assigned = '\\\\?["\']?\\s{0,4}[:=]\\s{0,4}\\\\?["\']?';

// Samples a secret scanner knows are built from parts, so that this file is not itself a finding.
const joined = (...parts: string[]) => parts.join('');

/** The built-in shapes. */
export const builtinSecretPatterns: readonly BuiltinSecretPattern[] = [
  {
    name: 'private_key',
    anchor: '-----BEGIN',
    pattern:
      `[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----${pemBody}*(?:-(?!----)${pemBody}*)*` +
      '(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?',
    sample:
      '{"key":"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0B\\nAQEFAASC==\\n-----END PRIVATE KEY-----\\n"}',
    redacted: '{"key":"[REDACTED:private_key]\\n"}',
  },
  {
    name: 'jwt',
    anchor: 'J',
    prefix: 'ey',
    pattern: `${wholeRun('header')}\\.${wholeRun('payload')}\\.${token}*`,
    sample: 'token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVl',
    redacted: 'token=[REDACTED:jwt]',
  },
  {
    name: 'api_key',
    // OpenAI (`sk-proj-…`), Anthropic (`sk-ant-…`) and the many keys shaped like them.
    anchor: '-',
    prefix: 'sk',
    pattern: `${token}{20,}`,
    sample: 'OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123',
    redacted: 'OPENAI_API_KEY=[REDACTED:api_key]',
  },
  {
    name: 'aws_key',
    anchor: 'A',
    pattern: '(?:KIA|SIA)(?<![A-Za-z0-9]A(?:KIA|SIA))[A-Z0-9]{16}(?![A-Za-z0-9])',
    sample: 'aws_access_key_id = AKIAIOSFODNN7EXAMPLE',
    redacted: 'aws_access_key_id = [REDACTED:aws_key]',
  },
  {
    name: 'aws_secret',
    // 40 characters of base64 with no prefix of their own: known only by the name before them.
    anchor: '_',
    prefix: 'aws|AWS',
    pattern: `(?:secret_access_key|SECRET_ACCESS_KEY)${assigned}(?<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])`,
    sample: 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    redacted: 'AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret]',
  },
  {
    name: 'aws_secret',
    // The same in the JSON of `aws sts assume-role` and the SDKs' credential objects.
    anchor: 'A',
    prefix: '[Ss]ecret',
    pattern: `ccessKey${assigned}(?<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])`,
    sample: '{"AccessKeyId":"ASIA","SecretAccessKey":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
    redacted: '{"AccessKeyId":"ASIA","SecretAccessKey":"[REDACTED:aws_secret]"}',
  },
  {
    name: 'github_token',
    anchor: '_',
    prefix: 'gh[pousr]|github',
    pattern: '(?:(?<=github_)pat_[A-Za-z0-9_]{22,}|(?<=gh[pousr]_)[A-Za-z0-9]{36,})',
    sample: joined('pushed with ', 'ghp', '_0123456789abcdefghijABCDEFGHIJ012345'),
    redacted: 'pushed with [REDACTED:github_token]',
  },
  {
    name: 'gitlab_token',
    // Personal, deploy, runner, trigger, OAuth, CI job, incoming mail, agent, service account,
    // feature flag and feed tokens.
    anchor: '-',
    prefix: 'gl(?:pat|dt|rt|ptt|oas|cbt|imt|agent|soat|ffct|ft)',
    pattern: '[A-Za-z0-9_.-]{20,}',
    sample: joined('PRIVATE-TOKEN: ', 'glpat', '-xY9z8W7v6U5t4S3r2Q1p'),
    redacted: 'PRIVATE-TOKEN: [REDACTED:gitlab_token]',
  },
  {
    name: 'gitlab_token',
    // A runner registration token.
    anchor: 'GR1348941',
    pattern: `${startsToken('GR1348941')}[A-Za-z0-9_-]{20,}`,
    sample: joined('--registration-token ', 'GR1348941', 'aBcDeFgHiJkLmNoPqRsT'),
    redacted: '--registration-token [REDACTED:gitlab_token]',
  },
  {
    name: 'slack_token',
    anchor: '-',
    prefix: 'xox[abposre]|xapp',
    pattern: '[A-Za-z0-9-]{10,}',
    sample: joined('slack ', 'xoxb', '-1234567890-abcdefghij'),
    redacted: 'slack [REDACTED:slack_token]',
  },
  {
    name: 'slack_webhook',
    anchor: '://',
    prefix: 'https?',
    pattern: 'hooks\\.slack\\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}',
    sample: joined(
      'POST https://hooks.slack',
      '.com/services/',
      'T0ABCDEF1/B0ABCDEF2/abcdefghijklmnopqrstuvwx',
    ),
    redacted: 'POST [REDACTED:slack_webhook]',
  },
  {
    name: 'stripe_key',
    // Secret and restricted keys, and webhook signing secrets; publishable `pk_` keys are public.
    anchor: '_',
    prefix: '[rs]k|whsec',
    pattern: '(?:(?<=k_)(?:live|test)_[A-Za-z0-9]{10,}|(?<=c_)[A-Za-z0-9+/=]{24,})',
    sample: joined('stripe ', 'sk', '_live_', '51HqLyjWDarjtT1zdp7dcAbCdEf'),
    redacted: 'stripe [REDACTED:stripe_key]',
  },
  {
    name: 'google_api_key',
    anchor: 'AIza',
    pattern: `${startsToken('AIza')}[A-Za-z0-9_-]{35}${endsToken}`,
    sample: joined('maps?key=', 'AIza', 'SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW&q=x'),
    redacted: 'maps?key=[REDACTED:google_api_key]&q=x',
  },
  {
    name: 'google_oauth',
    // An OAuth client secret (an access token `ya29.…` travels as a `Bearer` credential).
    anchor: '-',
    prefix: 'GOCSPX',
    pattern: `[A-Za-z0-9_-]{28}${endsToken}`,
    sample: joined('"client_secret":"', 'GOCSPX', '-1a2B3c4D5e6F7g8H9i0JkLmNoPqR"'),
    redacted: '"client_secret":"[REDACTED:google_oauth]"',
  },
  {
    name: 'npm_token',
    anchor: '_',
    prefix: 'npm',
    pattern: `[A-Za-z0-9]{36}${endsToken}`,
    sample: joined('//registry.npmjs.org/:_authToken=', 'npm', '_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789'),
    redacted: '//registry.npmjs.org/:_authToken=[REDACTED:npm_token]',
  },
  {
    name: 'huggingface_token',
    anchor: '_',
    prefix: 'hf|api_org',
    pattern: '[A-Za-z0-9]{30,}',
    sample: joined('HF_TOKEN=', 'hf', '_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh'),
    redacted: 'HF_TOKEN=[REDACTED:huggingface_token]',
  },
  {
    name: 'sendgrid_key',
    anchor: 'SG.',
    pattern: `(?<!${token}SG\\.)[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}${endsToken}`,
    sample: joined('key ', 'SG', '.AbCdEfGhIjKlMnOpQrStUv.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfG'),
    redacted: 'key [REDACTED:sendgrid_key]',
  },
  {
    name: 'twilio_key',
    anchor: 'SK',
    pattern: `${startsToken('SK')}[0-9a-f]{32}${endsToken}`,
    sample: joined('twilio ', 'SK', '0123456789abcdef0123456789abcdef'),
    redacted: 'twilio [REDACTED:twilio_key]',
  },
  {
    name: 'shopify_token',
    anchor: '_',
    prefix: 'shp(?:at|ca|pa|ss)',
    pattern: `[a-fA-F0-9]{32}${endsToken}`,
    sample: joined('X-Shopify-Access-Token: ', 'shpat', '_0123456789abcdef0123456789abcdef'),
    redacted: 'X-Shopify-Access-Token: [REDACTED:shopify_token]',
  },
  {
    name: 'digitalocean_token',
    anchor: '_',
    prefix: 'do[opr]',
    pattern: `v1_[a-f0-9]{64}${endsToken}`,
    sample: joined('DO_TOKEN=', 'dop', '_v1_', '0123456789abcdef'.repeat(4)),
    redacted: 'DO_TOKEN=[REDACTED:digitalocean_token]',
  },
  {
    name: 'pypi_token',
    anchor: '-',
    prefix: 'pypi',
    pattern: 'AgE[A-Za-z0-9_-]{50,}',
    sample: joined(
      'password = ',
      'pypi',
      '-AgEIcHlwaS5vcmcCJDAxMjM0NTY3LTg5YWItY2RlZi0wMTIzLTQ1Njc4OWFiY2RlZgACKlsz',
    ),
    redacted: 'password = [REDACTED:pypi_token]',
  },
  {
    name: 'azure_storage_key',
    anchor: 'AccountKey=',
    pattern: '(?<secret>[A-Za-z0-9+/]{86}==)',
    sample: joined(
      'DefaultEndpointsProtocol=https;AccountName=acct;',
      'AccountKey=',
      'Ab'.repeat(43),
      '==;EndpointSuffix=core.windows.net',
    ),
    redacted:
      'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=[REDACTED:azure_storage_key];EndpointSuffix=core.windows.net',
  },
  {
    name: 'bearer',
    anchor: 'Bearer',
    pattern: '\\s{1,8}(?<secret>[A-Za-z0-9._~+/-]{8,}=*)',
    sample: 'Authorization: Bearer abcdef0123456789ghij',
    redacted: 'Authorization: Bearer [REDACTED:bearer]',
  },
  {
    name: 'bearer',
    anchor: 'bearer',
    pattern: '\\s{1,8}(?<secret>[A-Za-z0-9._~+/-]{8,}=*)',
    sample: 'authorization: bearer abcdef0123456789ghij',
    redacted: 'authorization: bearer [REDACTED:bearer]',
  },
  {
    name: 'basic_auth',
    // base64 of `user:password`. Prose ("Basic authentication") is a capital and lower-case
    // letters: a credential has a digit, `+`, `/`, `=` or a capital after its first character.
    anchor: 'Basic',
    pattern:
      '(?<![A-Za-z0-9]Basic)\\s{1,8}(?=[A-Za-z0-9+/][a-z]*[A-Z0-9+/=])(?<secret>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])',
    sample: 'Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l',
    redacted: 'Authorization: Basic [REDACTED:basic_auth]',
  },
  {
    name: 'url_password',
    // `scheme://user:password@host`: the scheme and the user stay. Both parts are bounded, so each
    // `://` costs a bounded scan; the password runs to the last `@` before the host.
    anchor: '://',
    pattern: '[^\\s:/?#@"\'<>\\\\]{0,256}:(?<secret>[^\\s/?#"\'<>\\\\]{1,256})(?=@)',
    sample: 'DATABASE_URL=postgres://app:s3cret-pw@db.internal:5432/orders',
    redacted: 'DATABASE_URL=postgres://app:[REDACTED:url_password]@db.internal:5432/orders',
  },
];
