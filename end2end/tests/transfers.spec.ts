// A learner moves a course to their other account: they ask on the
// course's page, the other account confirms from the mailed link, and the
// tenant's admin approves in the console. In English and in Simplified
// Chinese.
import { expect, test } from "@playwright/test";
import { linkIn, mailsFor, openHydrated, waitForMail } from "./fixtures";
import { adminApi, createCourse, newLearner, shareState, specTenant, sql } from "./course";

interface Words {
  locale: string;
  moveLink: string;
  address: string;
  ask: string;
  awaitingTarget: string;
  confirm: string;
  confirmed: string;
  approve: string;
  approved: string;
  codeLabel: string;
  useCode: string;
}

const ENGLISH: Words = {
  locale: "en-GB",
  moveLink: "Move this course to another account",
  address: "Address of the other account",
  ask: "Ask to move the course",
  awaitingTarget: "waiting for the receiving account to confirm",
  confirm: "Confirm the move",
  confirmed: "The course's team decides next",
  approve: "Approve the move",
  approved: "approved",
  codeLabel: "Access code",
  useCode: "Use this code",
};

const CHINESE: Words = {
  locale: "zh-CN",
  moveLink: "把课程转到另一个账号",
  address: "另一个账号的邮箱",
  ask: "申请转移课程",
  awaitingTarget: "等待接收账号确认",
  confirm: "确认转移",
  confirmed: "接下来由课程团队决定",
  approve: "批准转移",
  approved: "已批准",
  codeLabel: "兑换码",
  useCode: "使用此兑换码",
};

for (const words of [ENGLISH, CHINESE]) {
  test.describe(`in ${words.locale}`, () => {
    test.use({ locale: words.locale });

    test("a learner moves a course to their other account and an admin approves", async ({ browser }) => {
      test.setTimeout(90_000);
      const api = await adminApi();
      const course = await createCourse(api, { codes: 1 });
      const tenant = (await specTenant()).id;

      // Ann holds the course (entered the code, opened a lesson).
      const annContext = await browser.newContext({ locale: words.locale });
      const ann = await annContext.newPage();
      const annEmail = await newLearner(annContext, "transfer-from");
      await openHydrated(ann, `/s/${course.slug}`);
      await ann.getByLabel(words.codeLabel).fill(course.codes[0]);
      await ann.getByRole("button", { name: words.useCode }).click();
      await expect(shareState(ann)).toHaveAttribute("data-state", "pending");
      await ann.getByRole("link", { name: "Lesson 1: Ownership" }).click();
      await expect(ann.locator(".bound-note")).toContainText(annEmail);

      // Her other account exists (verified), and she asks.
      const bobContext = await browser.newContext({ locale: words.locale });
      const bob = await bobContext.newPage();
      const bobEmail = await newLearner(bobContext, "transfer-to");
      await openHydrated(ann, `/s/${course.slug}`);
      await ann.getByRole("link", { name: words.moveLink }).click();
      await expect(ann).toHaveURL(new RegExp(`/s/${course.slug}/transfer$`));
      await expect(ann.locator("body")).toHaveAttribute("data-hydrated", "true");
      await ann.getByLabel(words.address).fill(bobEmail);
      await ann.getByRole("button", { name: words.ask }).click();
      await expect(ann.locator(".transfer-status")).toHaveAttribute("data-status", "awaiting_target");
      await expect(ann.locator(".transfer-status")).toContainText(words.awaitingTarget);

      // The other account confirms from the mailed link.
      const mail = await waitForMail(bobEmail, course.title);
      await openHydrated(bob, linkIn(mail, "/transfer?token="));
      await bob.getByRole("button", { name: words.confirm }).click();
      await expect(bob).toHaveURL(/\/courses$/);
      await expect(bob.getByRole("status").filter({ hasText: words.confirmed })).toBeVisible();
      expect(sql(`SELECT status FROM transfer_requests WHERE share_id = '${course.id}'`)).toBe("awaiting_admin");

      // The admin approves in the console (the API client's session).
      const adminContext = await browser.newContext({ locale: words.locale });
      await adminContext.addCookies((await api.storageState()).cookies);
      const admin = await adminContext.newPage();
      await openHydrated(admin, `/admin/t/${tenant}/transfers`);
      const waiting = admin.locator("section.transfers-waiting article.transfer").filter({ hasText: bobEmail });
      await expect(waiting).toContainText(annEmail);
      await waiting.getByRole("button", { name: words.approve }).click();
      await expect(admin.locator("section.transfers-waiting article.transfer").filter({ hasText: bobEmail })).toHaveCount(0);
      const row = admin.locator("table.transfers tr").filter({ hasText: bobEmail });
      await expect(row).toHaveAttribute("data-status", "approved");
      await expect(row).toContainText(words.approved);

      // The course is Bob's now, with the code Ann bound; Ann needs a code.
      expect(
        sql(`SELECT a.email FROM auth_codes c JOIN accounts a ON a.id = c.bound_principal
             WHERE c.share_id = '${course.id}'`),
      ).toBe(bobEmail);
      await openHydrated(bob, `/s/${course.slug}`);
      await expect(shareState(bob)).toHaveAttribute("data-state", "has-access");
      await expect(bob.locator(".bound-note")).toContainText(bobEmail);
      await openHydrated(ann, `/s/${course.slug}`);
      await expect(shareState(ann)).toHaveAttribute("data-state", "needs-code");
      // Ann's mail, in the language of her account.
      await expect
        .poll(async () => (await mailsFor(annEmail)).some((m) => /moved to another account|已转到另一个账号/.test(m.subject)))
        .toBe(true);
      expect(sql(`SELECT count(*) FROM outbox WHERE event_type = 'code.transferred' AND payload->>'share_id' = '${course.id}'`)).toBe("1");
      await Promise.all([annContext.close(), bobContext.close(), adminContext.close()]);
    });
  });
}
