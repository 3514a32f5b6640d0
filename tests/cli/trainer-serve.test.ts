// `gsteer trainer serve` options: bad input exits 2 with the rule and the fix (never a stack
// trace), and Tinker's LoraConfig maps onto gsteer's LoRA as documented (train_attn / train_mlp
// pick the projections; gsteer's target_modules win; neither is refused).
import { describe, expect, it, vi } from 'vitest';
import { main } from '../../cli/main.ts';
import { peftLora } from '../../cli/commands/trainer-serve.ts';

async function run(argv: string[]): Promise<{ code: number; err: string }> {
  let err = '';
  const spy = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void (err += a.join(' ') + '\n'));
  try {
    return { code: await main(argv), err };
  } finally {
    spy.mockRestore();
  }
}

describe('gsteer trainer serve', () => {
  it('refuses bad input with exit 2 and a message naming the option', async () => {
    expect(await run(['trainer', 'serve'])).toEqual({ code: 2, err: expect.stringMatching(/--model DIR is required/) });
    expect(await run(['trainer', 'nope'])).toEqual({ code: 2, err: expect.stringMatching(/unknown subcommand "nope"; use gsteer trainer serve --model DIR/) });
    expect(await run(['trainer', 'serve', '--model', 'models/tiny-demo', '--compress', 'maybe'])).toEqual({
      code: 2,
      err: expect.stringMatching(/--compress must be on or off but is "maybe"/),
    });
    expect(await run(['trainer', 'serve', '--model', 'models/tiny-demo', '--port', '99999'])).toEqual({
      code: 2,
      err: expect.stringMatching(/--port must be an integer in \[0, 65535\]/),
    });
  });

  it("maps Tinker's LoraConfig to gsteer's LoRA", () => {
    const base = { rank: 8, seed: 1, trainAttn: true, trainMlp: true, trainUnembed: true };
    expect(peftLora(base, 32)).toEqual({
      r: 8,
      alpha: 32,
      dropout: 0,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
    });
    expect(peftLora({ ...base, trainMlp: false, alpha: 16, dropout: 0.05 }, 32)).toEqual({
      r: 8,
      alpha: 16,
      dropout: 0.05,
      targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj'],
    });
    expect(peftLora({ ...base, targetModules: ['q_proj', 'v_proj'] }, 32).targetModules).toEqual(['q_proj', 'v_proj']);
    expect(() => peftLora({ ...base, trainAttn: false, trainMlp: false }, 32)).toThrow(/train_attn and train_mlp are both false/);
    expect(() => peftLora({ ...base, targetModules: ['lm_head'] }, 32)).toThrow(/target_modules has "lm_head"/);
  });
});
