// A sample of each secret format the built-in redactor knows, for the redaction tests and the sweep.

/** One sample of each built-in format, and the name it is shown by. */
export const secrets = {
  api_key: 'sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123',
  aws_key: 'AKIAIOSFODNN7EXAMPLE',
  jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXZhbHVl',
  bearer: 'Bearer abcdef0123456789ghij',
  github_token: 'ghp_0123456789abcdefghijABCDEFGHIJ012345',
  slack_token: 'xoxb-1234567890-abcdefghij',
  private_key: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----',
} as const;

/** The parts of each sample that must never reach a sink. */
export const secretCores = [
  'AbCdEfGhIjKlMnOpQrStUvWx',
  'IOSFODNN7EXAMPLE',
  'eyJzdWIiOiIxMjM0In0',
  'abcdef0123456789ghij',
  '0123456789abcdefghijABCDEFGHIJ',
  '1234567890-abcdefghij',
  'MIIEowIBAAKCAQEA7',
];
