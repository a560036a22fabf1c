// A learner who reads Traditional Chinese (a Taiwanese browser): the share
// page, the browser's own code check (wasm), the server's answers, the
// first access that binds the code and the video, all in Traditional
// characters, with no hydration mismatch; the switcher offers all three
// languages.
import { expect, test, type Page } from "@playwright/test";
import { openHydrated } from "./fixtures";
import { adminApi, createCourse, expectVideoPlays, newLearner, shareState, snapshot, sql, typo, unknownCode } from "./course";

/** Collects console messages that point at a hydration mismatch. */
function hydrationProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (m) => {
    if (/hydrat/i.test(m.text()) && m.type() !== "debug") problems.push(m.text());
  });
  page.on("pageerror", (e) => problems.push(e.message));
  return problems;
}

/** Words that only Simplified Chinese writes this way. */
const SIMPLIFIED = /兑换码|登录|课程|账号|绑定|访问/;

test.describe("with a Taiwanese browser", () => {
  test.use({ locale: "zh-TW" });

  test("a zh-TW learner binds a code and watches the lesson in Traditional Chinese", async ({ page, context }, testInfo) => {
    const problems = hydrationProblems(page);
    const course = await createCourse(await adminApi(), { title: "Rust 入門" });

    await openHydrated(page, `/s/${course.slug}`);
    await expect(page.locator("html")).toHaveAttribute("lang", "zh-TW");
    await expect(page.getByRole("link", { name: "登入" }).first()).toBeVisible();
    expect(await page.locator("body").innerText()).not.toMatch(SIMPLIFIED);

    const email = await newLearner(context, "tw");
    await openHydrated(page, `/s/${course.slug}`);
    // The browser's own check, in wasm, then the server's refusal.
    await page.getByLabel("兌換碼").fill(typo(course.codes[0]));
    await page.getByRole("button", { name: "使用此兌換碼" }).click();
    await expect(page.locator("#code-error")).toHaveText("兌換碼有輸入錯誤，請核對後重試。");
    await page.getByLabel("兌換碼").fill(unknownCode());
    await page.getByRole("button", { name: "使用此兌換碼" }).click();
    await expect(page.locator("#code-error")).toHaveText("這個兌換碼無效。");

    // The real code: accepted, bound at the first opening of the lesson.
    await page.getByLabel("兌換碼").fill(course.codes[0]);
    await page.getByRole("button", { name: "使用此兌換碼" }).click();
    // Pending (the card's words depend on whether the answer came in place
    // or with a fresh page; both are Traditional).
    await expect(shareState(page)).toHaveAttribute("data-state", "pending");
    await expect(page.locator(".state-card")).toContainText("綁定到");
    expect(await page.locator("body").innerText()).not.toMatch(SIMPLIFIED);
    await snapshot(page, testInfo, "share-pending-zh-tw");
    await page.getByRole("link", { name: "Lesson 1: Ownership" }).click();
    await expect(page.locator(".flash.success")).toContainText("你的兌換碼已綁定到此帳號");
    await expectVideoPlays(page);
    expect(await page.locator("body").innerText()).not.toMatch(SIMPLIFIED);
    await snapshot(page, testInfo, "resource-bound-zh-tw");
    expect(
      sql(`SELECT a.email FROM auth_codes c JOIN accounts a ON a.id = c.bound_principal WHERE c.share_id = '${course.id}'`),
    ).toBe(email);

    // My courses, then the switcher: all three languages, the choice sticks.
    await openHydrated(page, "/courses");
    await expect(page.getByRole("heading", { level: 1, name: "我的課程" })).toBeVisible();
    await expect(page.getByRole("link", { name: "简体中文" })).toBeVisible();
    await expect(page.getByRole("link", { name: "English" })).toBeVisible();
    await page.getByRole("link", { name: "简体中文" }).click();
    await expect(page.locator("html")).toHaveAttribute("lang", "zh-CN");
    await expect(page.getByRole("heading", { level: 1, name: "我的课程" })).toBeVisible();
    await page.getByRole("link", { name: "繁體中文" }).click();
    await expect(page.locator("html")).toHaveAttribute("lang", "zh-TW");
    await expect(page.getByRole("heading", { level: 1, name: "我的課程" })).toBeVisible();
    expect(problems).toEqual([]);
  });
});
