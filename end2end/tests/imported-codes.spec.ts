// A creator imports 1,000 codes a shop sold (a CSV uploaded in the
// console), reads the import's report, and a learner redeems one of them
// as the shop printed it: in English and in Simplified Chinese.
import { expect, test, type Page } from "@playwright/test";
import { openHydrated } from "./fixtures";
import { adminApi, createCourse, newLearner, shareState, specTenant, sql } from "./course";

interface Words {
  locale: string;
  file: string;
  header: string;
  importButton: string;
  imported: RegExp;
  rejectedLine: string;
  codeLabel: string;
  useCode: string;
}

const ENGLISH: Words = {
  locale: "en-GB",
  file: "File (CSV or text)",
  header: "The first line names the columns",
  importButton: "Import codes",
  imported: /1,000 of 1,002 codes imported/,
  rejectedLine: "Line 1003: the same code is on an earlier line",
  codeLabel: "Access code",
  useCode: "Use this code",
};

const CHINESE: Words = {
  locale: "zh-CN",
  file: "文件（CSV 或文本）",
  header: "第一行是列名",
  importButton: "导入兑换码",
  imported: /已导入 1,000 个兑换码，共 1,002 个/,
  rejectedLine: "第 1003 行: 同一兑换码已在前面的行出现",
  codeLabel: "兑换码",
  useCode: "使用此兑换码",
};

/** 1,000 shop codes (`SHOP-xxxx-0001` …) with a header, one malformed
 * line and one repeated code. */
function shopCsv(prefix: string): { csv: string; codes: string[] } {
  const codes = Array.from({ length: 1000 }, (_, i) => `${prefix}-${String(i + 1).padStart(4, "0")}`);
  const lines = ["Voucher,Customer", ...codes.map((c, i) => `${c},customer${i}@shop.example`), "N/A,nobody", `${codes[0]},again`];
  return { csv: lines.join("\n") + "\n", codes };
}

async function importJourney(page: Page, words: Words) {
  const course = await createCourse(await adminApi(), { codes: 1 });
  const tenant = (await specTenant()).id;
  const prefix = `S${Math.random().toString(36).slice(2, 7).toUpperCase()}`;
  const { csv, codes } = shopCsv(prefix);

  // The admin API client's session, reused: sign-ins per address are
  // throttled, and the sign-in form's own journey is accounts.spec.ts.
  const session = await (await adminApi()).storageState();
  await page.context().addCookies(session.cookies);
  await openHydrated(page, `/admin/t/${tenant}/s/${course.id}`);
  await expect(page.getByRole("heading", { level: 1, name: course.title })).toBeVisible();
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
  await page.locator("details.import summary").click();
  await page.getByLabel(words.file).setInputFiles({ name: "shop.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
  await page.getByLabel(words.header).check();
  await page.locator("details.import").getByRole("button", { name: words.importButton, exact: true }).click();

  // The report: what came in, and the lines left out by number.
  await expect(page).toHaveURL(/\/imports\//, { timeout: 30_000 });
  await expect(page.getByTestId("import-summary")).toHaveText(words.imported);
  await expect(page.getByTestId("rejected-lines")).toContainText(words.rejectedLine);
  expect(sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${course.id}'`)).toBe("1001");
  expect(sql(`SELECT foreign_codes FROM shares WHERE id = '${course.id}'`)).toBe("t");
  return { course, codes };
}

for (const words of [ENGLISH, CHINESE]) {
  test.describe(`in ${words.locale}`, () => {
    test.use({ locale: words.locale });

    test("a creator imports 1,000 shop codes and a learner redeems one", async ({ page, browser }) => {
      test.setTimeout(120_000);
      const { course, codes } = await importJourney(page, words);

      // A learner types the shop's code their own way and opens the lesson.
      const context = await browser.newContext({ locale: words.locale });
      const learner = await context.newPage();
      const email = await newLearner(context, "imported");
      await openHydrated(learner, `/s/${course.slug}`);
      await expect(learner.locator("body")).toHaveAttribute("data-hydrated", "true");
      await learner.getByLabel(words.codeLabel).fill(codes[41].toLowerCase().replaceAll("-", " "));
      await learner.getByRole("button", { name: words.useCode }).click();
      await expect(shareState(learner)).toHaveAttribute("data-state", "pending");
      await learner.getByRole("link", { name: "Lesson 1: Ownership" }).click();
      await expect(learner.locator(".bound-note")).toContainText(email);
      expect(
        sql(`SELECT a.email || '|' || b.source FROM auth_codes c
             JOIN accounts a ON a.id = c.bound_principal JOIN code_batches b ON b.id = c.batch_id
             WHERE c.share_id = '${course.id}'`),
      ).toBe(`${email}|imported`);
      await context.close();
    });
  });
}
