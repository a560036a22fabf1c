// The interface in Simplified Chinese: chosen from Accept-Language, switched
// with the footer's links (a cookie), kept across pages, and the hydrated
// page speaks the same language as the server-rendered one.
import { expect, test, type Page } from "@playwright/test";
import { openHydrated } from "./fixtures";
import { adminApi, createCourse, specTenant, newLearner, snapshot, typo, unknownCode } from "./course";

/** Collects console messages that point at a hydration mismatch. */
function hydrationProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (m) => {
    if (/hydrat/i.test(m.text()) && m.type() !== "debug") problems.push(m.text());
  });
  page.on("pageerror", (e) => problems.push(e.message));
  return problems;
}

test.describe("with a Chinese browser", () => {
  test.use({ locale: "zh-CN" });

  test("learner pages, code errors and the switcher speak Chinese", async ({ page, context }, testInfo) => {
    const problems = hydrationProblems(page);
    const course = await createCourse(await adminApi(), { title: "Rust 入门" });

    await openHydrated(page, `/s/${course.slug}`);
    await expect(page.locator("html")).toHaveAttribute("lang", "zh-CN");
    await expect(page.getByRole("link", { name: "登录" }).first()).toBeVisible();
    await snapshot(page, testInfo, "share-signed-out-zh");

    await newLearner(context, "zh");
    await openHydrated(page, `/s/${course.slug}`);
    // The browser's own check, in wasm, in Chinese.
    await page.getByLabel("兑换码").fill(typo(course.codes[0]));
    await page.getByRole("button", { name: "使用此兑换码" }).click();
    await expect(page.locator("#code-error")).toHaveText("兑换码有输入错误，请核对后重试。");
    // The server's refusal, in Chinese.
    await page.getByLabel("兑换码").fill(unknownCode());
    await page.getByRole("button", { name: "使用此兑换码" }).click();
    await expect(page.locator("#code-error")).toHaveText("这个兑换码无效。");
    await snapshot(page, testInfo, "share-code-error-zh");

    // English by the switcher; the choice sticks across pages and reloads.
    await page.getByRole("link", { name: "English" }).click();
    await expect(page.locator("html")).toHaveAttribute("lang", "en");
    await expect(page).toHaveURL(new RegExp(`/s/${course.slug}$`));
    await expect(page.getByLabel("Access code")).toBeVisible();
    await openHydrated(page, "/courses");
    await expect(page.getByRole("heading", { level: 1, name: "My courses" })).toBeVisible();

    // And back to Chinese.
    await page.getByRole("link", { name: "简体中文" }).click();
    await expect(page.locator("html")).toHaveAttribute("lang", "zh-CN");
    await expect(page.getByRole("link", { name: "我的课程" }).first()).toBeVisible();
    expect(problems).toEqual([]);
  });

  test("the console speaks Chinese, its errors too", async ({ page }, testInfo) => {
    const problems = hydrationProblems(page);
    await openHydrated(page, "/login?next=/admin");
    const owner = await signInInChinese(page);
    await expect(page.getByRole("heading", { level: 1, name: "管理后台" })).toBeVisible();
    await page.getByRole("link", { name: owner.name }).click();
    await expect(page.locator("html")).toHaveAttribute("lang", "zh-CN");
    await expect(page.getByText("已发兑换码")).toBeVisible();
    await snapshot(page, testInfo, "console-dashboard-zh");
    // A field error from the server, in Chinese: a title of spaces.
    await page.locator("body[data-hydrated]").waitFor();
    await page.locator("input[name=title]").first().fill("   ");
    await page.locator("form:has(input[name=title]) button[type=submit]").first().click();
    await expect(page.locator("#title-error")).toHaveText("标题需要 1 到 200 个可见字符。");
    expect(problems).toEqual([]);
  });
});

/** Signs the spec tenant's owner in from the Chinese sign-in form. */
async function signInInChinese(page: Page) {
  const owner = await specTenant();
  await page.getByLabel("邮箱").fill(owner.email);
  await page.getByLabel("密码").fill(owner.password);
  await page.getByRole("button", { name: "登录" }).click();
  return owner;
}

test("an English browser gets English, and unknown languages are refused", async ({ page }) => {
  await openHydrated(page, "/");
  await expect(page.locator("html")).toHaveAttribute("lang", "en");
  const response = await page.request.get("/lang/xx?back=/", { maxRedirects: 0 });
  expect(response.status()).toBe(404);
  // The switcher never redirects off the site.
  const away = await page.request.get("/lang/en?back=//evil.example/", { maxRedirects: 0 });
  expect(away.status()).toBe(303);
  expect(away.headers()["location"]).toBe("/");
});
