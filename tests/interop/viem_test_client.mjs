// viem's test client and wallet client against scopecast's dev chain, as a hardhat or anvil user
// writes them: the dev accounts from eth_accounts, a transfer sent with eth_sendTransaction (no
// local key), setBalance, increaseTime and setNextBlockTimestamp then mine, setAutomine.
//
// usage: node viem_test_client.mjs '{"http": URL}'

import { createPublicClient, createTestClient, createWalletClient, defineChain, http, parseEther } from 'viem';

import { runScript } from './report.mjs';

runScript('viem test client', ['viem'], async (report, { http: url }) => {
  const chain = defineChain({
    id: 1337,
    name: 'scopecast dev',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  });
  const transport = http(url);
  const publicClient = createPublicClient({ chain, transport });
  const testClient = createTestClient({ chain, mode: 'hardhat', transport });
  const anvilClient = createTestClient({ chain, mode: 'anvil', transport });
  const walletClient = createWalletClient({ chain, transport });

  const accounts = await walletClient.getAddresses();
  report.check(accounts.length === 10, `eth_accounts lists 10 dev accounts (got ${accounts.length})`);
  const [from, to] = accounts;

  const before = await publicClient.getBalance({ address: to });
  const hash = await walletClient.sendTransaction({ account: from, to, value: parseEther('1') });
  const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 10_000 });
  report.check(receipt.status === 'success', `the transfer succeeded (${receipt.status})`);
  report.check(receipt.gasUsed === 21000n, `estimated gas 21000 (got ${receipt.gasUsed})`);
  const after = await publicClient.getBalance({ address: to });
  report.check(after - before === parseEther('1'), `the receiver got 1 ETH (${after - before})`);

  const rich = '0x00000000000000000000000000000000000000aa';
  await testClient.setBalance({ address: rich, value: parseEther('4242') });
  report.check((await publicClient.getBalance({ address: rich })) === parseEther('4242'), 'hardhat setBalance');
  await anvilClient.setBalance({ address: rich, value: parseEther('7') });
  report.check((await publicClient.getBalance({ address: rich })) === parseEther('7'), 'anvil setBalance');

  const wall = BigInt(Math.floor(Date.now() / 1000));
  await testClient.increaseTime({ seconds: 86_400 });
  await testClient.mine({ blocks: 1 });
  const later = await publicClient.getBlock();
  report.check(later.timestamp >= wall + 86_399n, `a day ahead of the clock (${later.timestamp - wall} s)`);
  const exact = later.timestamp + 1_000n;
  await testClient.setNextBlockTimestamp({ timestamp: exact });
  await testClient.mine({ blocks: 1 });
  report.check((await publicClient.getBlock()).timestamp === exact, 'setNextBlockTimestamp');

  await testClient.setAutomine(false);
  const pending = await walletClient.sendTransaction({ account: from, to, value: 1n });
  report.check(
    (await publicClient.getTransactionReceipt({ hash: pending }).catch(() => null)) === null,
    'with automine off the transfer waits',
  );
  await testClient.mine({ blocks: 1 });
  const mined = await publicClient.getTransactionReceipt({ hash: pending });
  report.check(mined.status === 'success', 'mined on demand');
  await testClient.setAutomine(true);
  report.observe('blocks', Number(await publicClient.getBlockNumber()));
});
