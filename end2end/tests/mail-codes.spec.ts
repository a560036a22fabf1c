// A creator sends a course's codes by mail from the console: a batch
// issued "to send by mail", a pasted list checked and then sent; each
// recipient gets their own code by mail, and the creator sees one of them
// turn to redeemed once that learner has used it. In English and in
// Simplified Chinese.
import { expect, test, type Page } from "@playwright/test";
import { openHydrated, waitForMail } from "./fixtures";
import { adminApi, createCourse, newLearner, shareState, specTenant, sql } from "./course";

interface Words {
  locale: string;
  howMany: string;
  toSendByMail: string;
  issue: string;
  title: string;
  addresses: string;
  check: string;
  wouldSend: string;
  send: string;
  sent: string;
  refresh: string;
  stateSent: string;
  stateRedeemed: string;
  codeLabel: string;
  useCode: string;
}

const ENGLISH: Words = {
  locale: "en-GB",
  howMany: "How many",
  toSendByMail: "To send by mail",
  issue: "Issue codes",
  title: "Send codes by mail",
  addresses: "Addresses",
  check: "Check the list",
  wouldSend: "Addresses that would each get a code: 2",
  send: "Send",
  sent: "Codes sent: 2",
  refresh: "Refresh",
  stateSent: "Sent",
  stateRedeemed: "Redeemed",
  codeLabel: "Access code",
  useCode: "Use this code",
};

const CHINESE: Words = {
  locale: "zh-CN",
  howMany: "数量",
  toSendByMail: "用于邮件发送",
  issue: "生成兑换码",
  title: "通过邮件发送兑换码",
  addresses: "邮箱地址",
  check: "检查列表",
  wouldSend: "将各收到一个兑换码的地址：2 个",
  send: "发送",
  sent: "已发送兑换码：2 个",
  refresh: "刷新",
  stateSent: "已发送",
  stateRedeemed: "已兑换",
  codeLabel: "兑换码",
  useCode: "使用此兑换码",
};

/** The recipient's row of the mail page's table. */
function recipient(page: Page, email: string) {
  return page.locator(`table.recipients tr[data-recipient="${email}"]`);
}

/** Reloads the mail page (its Refresh link) until `email`'s row is in `state`. */
async function untilState(page: Page, words: Words, email: string, state: string) {
  await expect
    .poll(
      async () => {
        await page.getByRole("link", { name: words.refresh }).click();
        await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
        return recipient(page, email).getAttribute("data-state", { timeout: 5_000 }).catch(() => null);
      },
      { timeout: 30_000, message: `${email} ${state}` },
    )
    .toBe(state);
}

for (const words of [ENGLISH, CHINESE]) {
  test.describe(`in ${words.locale}`, () => {
    test.use({ locale: words.locale });

    test("a creator mails codes to a pasted list and sees a recipient redeem", async ({ browser }) => {
      test.setTimeout(120_000);
      const api = await adminApi();
      const course = await createCourse(api, { codes: 1 });
      const tenant = (await specTenant()).id;

      // Two people with accounts (verified addresses) the codes are for.
      const annContext = await browser.newContext({ locale: words.locale });
      const annEmail = await newLearner(annContext, "mailed-ann");
      const bobEmail = (await newLearner(await browser.newContext({ locale: words.locale }), "mailed-bob"));

      // The creator issues a batch to send by mail: its page is the mail page.
      const adminContext = await browser.newContext({ locale: words.locale });
      await adminContext.addCookies((await api.storageState()).cookies);
      const admin = await adminContext.newPage();
      await openHydrated(admin, `/admin/t/${tenant}/s/${course.id}`);
      await admin.getByLabel(words.howMany).fill("3");
      await admin.getByLabel(words.toSendByMail).check();
      await admin.getByRole("button", { name: words.issue }).click();
      await expect(admin).toHaveURL(new RegExp(`/admin/t/${tenant}/s/${course.id}/batches/[0-9a-f-]+/mail$`));
      await expect(admin.getByRole("heading", { level: 1 })).toHaveText(words.title);
      await expect(admin.locator("body")).toHaveAttribute("data-hydrated", "true");

      // A pasted list: checked first (nothing sent), then sent.
      await admin.getByLabel(words.addresses).fill(`email\n${annEmail}\n${bobEmail}\n${annEmail.toUpperCase()}`);
      await admin.getByRole("button", { name: words.check }).click();
      await expect(admin.locator(".mailing-report")).toContainText(words.wouldSend);
      await expect(admin.locator(".mailing-report")).toHaveAttribute("data-checked", "true");
      expect(sql(`SELECT count(*) FROM code_mailings m JOIN code_batches b ON b.id = m.batch_id WHERE b.share_id = '${course.id}'`)).toBe("0");
      await admin.getByRole("button", { name: words.send, exact: true }).click();
      await expect(admin.locator(".mailing-report")).toContainText(words.sent);
      await expect(recipient(admin, annEmail)).toBeVisible();
      await expect(recipient(admin, bobEmail)).toBeVisible();
      await untilState(admin, words, annEmail, "sent");
      await expect(recipient(admin, annEmail)).toContainText(words.stateSent);

      // Ann redeems the code her mail carries.
      const mail = await waitForMail(annEmail, course.title);
      const code = mail.text.match(/\b[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}\b/)?.[0];
      expect(code, mail.text).toBeTruthy();
      const ann = await annContext.newPage();
      await openHydrated(ann, `/s/${course.slug}`);
      await ann.getByLabel(words.codeLabel).fill(code as string);
      await ann.getByRole("button", { name: words.useCode }).click();
      await expect(shareState(ann)).toHaveAttribute("data-state", "pending");
      await ann.getByRole("link", { name: "Lesson 1: Ownership" }).click();
      await expect(ann.locator(".bound-note")).toContainText(annEmail);

      // The creator sees it: Ann's row redeemed, Bob's still sent.
      await untilState(admin, words, annEmail, "redeemed");
      await expect(recipient(admin, annEmail)).toContainText(words.stateRedeemed);
      await expect(recipient(admin, bobEmail)).toHaveAttribute("data-state", /queued|sent/);
      await Promise.all([annContext.close(), adminContext.close()]);
    });
  });
}
