// The Agents SDK tests' model: the local Responses server answering scripted replies in order,
// made the SDK's default client.

import { setDefaultOpenAIClient, setTracingDisabled } from '@openai/agents';
import OpenAI from 'openai';
import {
  startFakeProvider,
  type FakeProvider,
  type ResponsesReply,
} from '../../examples/fake-provider/index.js';

/**
 * Starts the fake provider as the Agents SDK's default client. Each Responses request takes the
 * next reply from `replies` (fill it before a run); `seen` gets each request's tool results as
 * `<call id>:<content>`.
 */
export async function scriptedAgentsProvider(
  seen?: (toolResults: string[]) => void,
): Promise<{ provider: FakeProvider; replies: ResponsesReply[] }> {
  const replies: ResponsesReply[] = [];
  const provider = await startFakeProvider({
    responses: ({ toolResults }) => {
      seen?.(toolResults.map(({ id, content }) => `${id}:${content}`));
      const reply = replies.shift();
      if (reply === undefined) throw new Error('no scripted reply');
      return reply;
    },
  });
  setTracingDisabled(true);
  setDefaultOpenAIClient(
    new OpenAI({ baseURL: provider.openaiBaseURL, apiKey: 'test', maxRetries: 0 }) as never,
  );
  return { provider, replies };
}
